package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/distill"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/weights"
)

// runDistill trains drafters for a target model by self-distillation on the CPU (package
// spec/distill): `gen` makes the training data with the target, `train` trains one drafter
// on it, `eval` measures a drafter's acceptance by simulating greedy speculative decoding.
func runDistill(args []string) error {
	subs := []struct {
		name, summary string
		run           func([]string) error
	}{
		{"gen", "generate training data with the target from a prompt set", runDistillGen},
		{"train", "train one drafter (eagle3, eagle, medusa, draft_model) on the data", runDistillTrain},
		{"eval", "measure a drafter's acceptance on the kept-apart prompts (CPU simulation)", runDistillEval},
	}
	if len(args) > 0 {
		for _, s := range subs {
			if s.name == args[0] {
				return s.run(args[1:])
			}
		}
	}
	fmt.Fprintf(os.Stderr, "usage: wspec distill <gen|train|eval> [flags]\n\n")
	for _, s := range subs {
		fmt.Fprintf(os.Stderr, "  %-6s %s\n", s.name, s.summary)
	}
	fmt.Fprintf(os.Stderr, "\nspec/distill/recipe.sh makes the repository's drafters for stories15M.\n")
	if len(args) == 0 {
		return fmt.Errorf("no subcommand")
	}
	return fmt.Errorf("unknown subcommand %q", args[0])
}

// loadDistillTarget loads the target folder (default: the default model).
func loadDistillTarget(dir string) (*distill.Target, error) {
	if dir == "" {
		d, err := engine.DefaultModelDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return distill.LoadTarget(dir)
}

// targetPrompts reads prompt set name, rendered in t's chat template when chat is set.
func targetPrompts(t *distill.Target, name string, chat bool) ([]string, error) {
	ps, err := distill.Prompts(name)
	if err != nil || !chat {
		return ps, err
	}
	return t.ChatPrompts(ps)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

func runDistillGen(args []string) error {
	fs := pflag.NewFlagSet("distill gen", pflag.ContinueOnError)
	modelDir := fs.String("model", "", "target model: a folder or a GGUF file; default: .wspec/models/stories15M")
	prompts := fs.String("prompts", "train", `prompt set: "train" (spec/distill/prompts/train.txt) or a file, one prompt a line`)
	chatFlag := fs.Bool("chat", false, "send each prompt as a user's message in the model's chat template")
	maxLen := fs.Int("max-len", 0, "positions per sequence, prompt included (0: the model's context)")
	out := fs.String("out", "", "dataset file to write (safetensors)")
	force := fs.Bool("force", false, "replace an existing --out file")
	greedy := fs.Int("greedy", 1, "greedy sequences per prompt")
	sampled := fs.Int("sampled", 2, "sequences per prompt sampled at --temperature / --top-p")
	mixed := fs.Int("mixed", 2, "sequences per prompt sampled for 1..32 tokens, then greedy")
	temp := fs.Float32("temperature", 0.8, "sampling temperature")
	topP := fs.Float32("top-p", 0.9, "nucleus sampling threshold")
	aux := fs.String("aux", "2,4,5", "target layers whose input is recorded (EAGLE-3's features)")
	k := fs.Int("top-k", 32, "teacher probabilities kept per position")
	batch := fs.Int("batch", 64, "sequences generated together")
	seed := fs.Int64("seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	if *maxLen < 0 {
		return fmt.Errorf("--max-len %d: want 0 (the model's context) or more", *maxLen)
	}
	if err := checkOutFile(*out, *force); err != nil { // before the generation, not after
		return err
	}
	auxIDs, err := parseInts(*aux)
	if err != nil {
		return fmt.Errorf("--aux: %w", err)
	}
	t, err := loadDistillTarget(*modelDir)
	if err != nil {
		return err
	}
	ps, err := targetPrompts(t, *prompts, *chatFlag)
	if err != nil {
		return err
	}
	seqs := len(ps) * (*greedy + *sampled + *mixed)
	bar := progressbar.NewOptions(seqs, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("generating"),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true))
	start := time.Now()
	d, err := distill.Generate(t.M, t.ID, t.Encode(ps), distill.GenOptions{Greedy: *greedy, Sampled: *sampled, Mixed: *mixed,
		Temperature: *temp, TopP: *topP, MaxLen: *maxLen, Aux: auxIDs, K: *k, Batch: *batch, Seed: *seed,
		Progress: func(done, total, positions int) {
			bar.Describe(fmt.Sprintf("generating: %d positions, %.0f tok/s", positions, float64(positions)/time.Since(start).Seconds()))
			bar.Set(done)
		}})
	if err != nil {
		return err
	}
	bar.Finish()
	fmt.Fprintf(os.Stderr, "\n%d sequences, %d positions in %s\n", d.Seqs(), d.Len(), time.Since(start).Round(time.Second))
	return d.Save(*out)
}

// checkOutFile refuses an output file that exists (unless force) or is not a regular file,
// and one whose folder does not exist or cannot be written, before any work is done.
func checkOutFile(path string, force bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("--out %s: not a regular file", path)
	case err == nil && !force:
		return fmt.Errorf("--out %s exists (pass --force to replace it)", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if dir, err := os.Stat(filepath.Dir(path)); err != nil || !dir.IsDir() {
		return fmt.Errorf("--out %s: its folder does not exist", path)
	}
	probe, err := os.CreateTemp(filepath.Dir(path), ".wspec-probe-")
	if err != nil {
		return fmt.Errorf("--out %s cannot be written: %w", path, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// forceHint adds to a refused output folder how to replace it, where --force would.
func forceHint(err error, force bool) error {
	if errors.Is(err, weights.ErrFolderExists) && !force && !strings.Contains(err.Error(), "not a model's") {
		return fmt.Errorf("%w (pass --force to replace it)", err)
	}
	return err
}
