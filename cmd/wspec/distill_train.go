package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"github.com/wspec/wspec/cmd/wspec/internal/plot"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/distill"
	"github.com/wspec/wspec/weights"
)

func runDistillTrain(args []string) error {
	fs := pflag.NewFlagSet("distill train", pflag.ContinueOnError)
	drafter := fs.String("drafter", "eagle3", "what to train: eagle3, eagle, medusa, draft_model")
	modelDir := fs.String("model", "", "target model: a folder or a GGUF file; default: .wspec/models/stories15M")
	data := fs.String("data", "", "dataset file from wspec distill gen")
	out := fs.String("out", "", "drafter folder to write")
	force := fs.Bool("force", false, "replace an --out folder that holds a drafter or model (once the new one is complete)")
	curve := fs.String("curve", "", "loss curve SVG to write (default: <out>/../<drafter>-loss.svg)")
	epochs := fs.Float64("epochs", 1, "passes over the training sequences")
	batch := fs.Int("batch-rows", 4096, "positions per optimizer step")
	lr := fs.Float64("lr", 1e-3, "peak learning rate (linear warmup, cosine decay to a tenth)")
	wd := fs.Float64("weight-decay", 0, "AdamW weight decay on matrices")
	valFrac := fs.Float64("val", 0.02, "fraction of sequences kept for the validation loss")
	seed := fs.Int64("seed", 1, "random seed")
	vd := fs.Int("draft-vocab", 4096, "eagle3: draft vocabulary size")
	ttt := fs.Int("ttt", 7, "eagle3: training-time-test steps")
	depth1 := fs.Float64("depth1-epochs", 0, "eagle3: epochs training depth 1 alone (one TTT step) before --epochs with --ttt steps")
	warm := fs.Bool("warm-start", true, "eagle3: start the layer from the target's last layer")
	noise := fs.Float64("noise", 0.1, "eagle: uniform noise on the input features, U(-a, a)")
	heads := fs.Int("heads", 4, "medusa: heads")
	tv := fs.Int("train-vocab", 8192, "eagle/medusa: LM-head rows (most probable tokens) the soft cross-entropy is taken over; 0: all")
	layers := fs.Int("layers", 2, "draft_model: layers")
	dim := fs.Int("dim", 128, "draft_model: hidden size")
	ffn := fs.Int("ffn", 384, "draft_model: intermediate size")
	nh := fs.Int("attn-heads", 4, "draft_model: attention heads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data == "" || *out == "" {
		return fmt.Errorf("--data and --out are required")
	}
	if err := weights.CheckFolder(*out, *force); err != nil { // before the training, not after
		return forceHint(err, *force)
	}
	switch bad := func(x float64) bool { return x < 0 || math.IsNaN(x) || math.IsInf(x, 0) }; {
	case *tv < 0:
		return fmt.Errorf("--train-vocab %d: want 0 (all) or a positive count", *tv)
	case bad(*noise):
		return fmt.Errorf("--noise %v: want a finite amplitude >= 0", *noise)
	case bad(*depth1):
		return fmt.Errorf("--depth1-epochs %v: want a finite count >= 0", *depth1)
	case bad(*wd):
		return fmt.Errorf("--weight-decay %v: want a finite value >= 0", *wd)
	}
	t, err := loadDistillTarget(*modelDir)
	if err != nil {
		return err
	}
	d, err := distill.LoadDataset(*data)
	if err != nil {
		return err
	}
	if err := t.CheckDataset(d); err != nil {
		return err
	}
	var tr distill.Trainer
	var save func() error
	switch *drafter {
	case "eagle3":
		e, err := distill.NewEagle3(t.W, d, distill.Eagle3Options{DraftVocab: *vd, TTT: *ttt, WarmStart: *warm, Seed: *seed})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "draft vocabulary of %d holds %.2f%% of the target's next-token probability mass\n", *vd, 100*e.Coverage)
		tr, save = e, func() error { return distill.SaveEagle(*out, e.Export(), t.ID, *force) }
	case "eagle":
		e, err := distill.NewEagle1(t.W, d, distill.Eagle1Options{Noise: *noise, Vocab: *tv, Seed: *seed})
		if err != nil {
			return err
		}
		tr, save = e, func() error { return distill.SaveEagle(*out, e.Export(), t.ID, *force) }
	case "medusa":
		m, err := distill.NewMedusa(t.W, d, distill.MedusaOptions{Heads: *heads, Vocab: *tv})
		if err != nil {
			return err
		}
		tr, save = m, func() error { return distill.SaveMedusa(*out, m.Export(), t.ID, *force) }
	case "draft_model":
		m, err := distill.NewDraftModel(t.W, d, distill.DraftOptions{Layers: *layers, Dim: *dim, Hidden: *ffn, Heads: *nh, Seed: *seed})
		if err != nil {
			return err
		}
		tr, save = m, func() error { return distill.SaveLlama(*out, m.Export(), t.ID, *force) }
	default:
		return fmt.Errorf("unknown drafter %q (want eagle3, eagle, medusa or draft_model)", *drafter)
	}
	train, val := distill.Split(d, *valFrac, *seed)
	start := time.Now()
	var points []distill.Point
	// phase trains for epochs with the options given, on its own progress bar.
	phase := func(name string, epochs float64) error {
		bar := progressbar.NewOptions(1, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetDescription(name))
		pts, err := distill.Train(tr, d, train, val, distill.TrainOptions{Epochs: epochs, BatchRows: *batch, LR: *lr,
			WeightDecay: *wd, Seed: *seed, Progress: func(p distill.Progress) {
				if p.Step == 1 {
					bar.ChangeMax(p.Steps)
				}
				acc := make([]string, len(p.Acc))
				for i, a := range p.Acc {
					acc[i] = fmt.Sprintf("%.2f", a)
				}
				bar.Describe(fmt.Sprintf("%s: loss %.3f, val %.3f, acc [%s], %.0f tok/s", name, p.Loss, p.Val,
					strings.Join(acc, " "), p.RowsPerSec))
				bar.Set(p.Step)
			}})
		bar.Finish()
		fmt.Fprintln(os.Stderr)
		for _, p := range pts {
			p.Step += len(points)
			points = append(points, p)
		}
		return err
	}
	if e3, ok := tr.(*distill.Eagle3); ok && *depth1 > 0 {
		if err := e3.SetTTT(1); err != nil {
			return err
		}
		if err := phase("training eagle3, depth 1", *depth1); err != nil {
			return err
		}
		if err := e3.SetTTT(*ttt); err != nil {
			return err
		}
	}
	if err := phase("training "+*drafter, *epochs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "trained in %s\n", time.Since(start).Round(time.Second))
	if err := save(); err != nil {
		return err
	}
	if *curve == "" {
		*curve = filepath.Join(filepath.Dir(filepath.Clean(*out)), *drafter+"-loss.svg")
	}
	title := fmt.Sprintf("%s for %s: loss per step (batch %d positions)", *drafter, t.ID.Name, *batch)
	return plot.Write(*curve, title, []plot.Panel{{XLabel: "step", YLabel: "loss", Series: curveSeries(points)}}, "")
}

// curveSeries turns a loss curve into plot lines: the training loss (smoothed over a window
// of about 1% of the steps) and the validation loss.
func curveSeries(curve []distill.Point) []plot.Series {
	tr, va := plot.Series{Name: "train (smoothed)"}, plot.Series{Name: "validation"}
	win := max(1, len(curve)/100)
	var sum float64
	for i, p := range curve {
		sum += p.Loss
		if i >= win {
			sum -= curve[i-win].Loss
		}
		tr.X, tr.Y = append(tr.X, float64(p.Step+1)), append(tr.Y, sum/float64(min(i+1, win)))
		if !math.IsNaN(p.Val) {
			va.X, va.Y = append(va.X, float64(p.Step+1)), append(va.Y, p.Val)
		}
	}
	return []plot.Series{tr, va}
}

func runDistillEval(args []string) error {
	fs := pflag.NewFlagSet("distill eval", pflag.ContinueOnError)
	modes := fs.String("drafter", "eagle3", "drafter kinds, comma-separated: eagle3, eagle, medusa, draft_model")
	dir := fs.String("dir", "", "drafter folder; with several kinds, the folder holding one subfolder per kind")
	modelDir := fs.String("model", "", "target model: a folder or a GGUF file; default: .wspec/models/stories15M")
	prompts := fs.String("prompts", "eval", `prompt set: "eval" (kept apart from training) or a file`)
	chatFlag := fs.Bool("chat", false, "send each prompt as a user's message in the model's chat template")
	maxNew := fs.Int("max-new", 128, "new tokens per prompt")
	kmax := fs.Int("k-max", 8, "measure k = 1..k-max draft tokens per step")
	sampleTemp := fs.Float64("sampling-temperature", 0, "also measure, at this temperature, an EAGLE head's first-draft acceptance with one-hot drafts against drafts sampled from its distribution (0: skip)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *dir == "":
		return fmt.Errorf("--dir is required")
	case *maxNew < 1:
		return fmt.Errorf("--max-new %d: want at least 1", *maxNew)
	case *kmax < 1 || *kmax > spec.MaxSpeculativeTokens:
		return fmt.Errorf("--k-max %d: want 1..%d", *kmax, spec.MaxSpeculativeTokens)
	case *sampleTemp < 0 || math.IsNaN(*sampleTemp) || math.IsInf(*sampleTemp, 0):
		return fmt.Errorf("--sampling-temperature %v: want a finite value >= 0", *sampleTemp)
	}
	t, err := loadDistillTarget(*modelDir)
	if err != nil {
		return err
	}
	kinds := strings.Split(*modes, ",")
	type drafter struct {
		mode, dir string
		d         distill.SimDrafter
	}
	var ds []drafter
	var aux []int
	for _, mode := range kinds {
		mode = strings.TrimSpace(mode)
		d := *dir
		if len(kinds) > 1 {
			d = filepath.Join(*dir, mode)
		}
		sd, a, err := distill.LoadSimDrafter(mode, d, t)
		if err != nil {
			return err
		}
		if a != nil {
			aux = a
		}
		ds = append(ds, drafter{mode, d, sd})
	}
	ps, err := targetPrompts(t, *prompts, *chatFlag)
	if err != nil {
		return err
	}
	refs, err := distill.Reference(t.M, t.Encode(ps), *maxNew, aux)
	if err != nil {
		return err
	}
	type row struct {
		K           int       `json:"k"`
		MeanLength  float64   `json:"mean_acceptance_length"`
		Rate        float64   `json:"acceptance_rate"`
		PerPosition []float64 `json:"acceptance_per_position"`
		Steps       int       `json:"steps"`
	}
	type result struct {
		Drafter   string  `json:"drafter"`
		Dir       string  `json:"dir"`
		Results   []row   `json:"results"`
		SampledAt float64 `json:"sampling_temperature,omitempty"`
		OneHot    float64 `json:"first_draft_acceptance_one_hot,omitempty"`
		Sampled   float64 `json:"first_draft_acceptance_sampled,omitempty"`
	}
	var results []result
	for _, d := range ds {
		r := result{Drafter: d.mode, Dir: d.dir}
		fmt.Printf("%s (%s) on %d prompts of %q, greedy, up to %d new tokens\n", d.mode, d.dir, len(ps), *prompts, *maxNew)
		fmt.Printf("%3s  %10s  %6s  %s\n", "k", "accept.len", "rate", "acceptance per position")
		for k := 1; k <= *kmax; k++ {
			a := distill.Simulate(d.d, refs, k, *maxNew, t.W.Cfg.MaxSeq, t.W.Cfg.EOS)
			x := row{K: k, MeanLength: a.MeanAcceptanceLength(), Rate: a.AcceptanceRate(), PerPosition: a.AcceptanceAt(), Steps: a.Steps}
			r.Results = append(r.Results, x)
			pp := make([]string, len(x.PerPosition))
			for i, v := range x.PerPosition {
				pp[i] = fmt.Sprintf("%.2f", v)
			}
			fmt.Printf("%3d  %10.3f  %6.3f  %s\n", k, x.MeanLength, x.Rate, strings.Join(pp, " "))
		}
		if eh, ok := d.d.(*distill.SimEagle); ok && *sampleTemp > 0 {
			oneHot, sampled, n := distill.SampledAcceptance(eh.Head(), t.M, refs, *sampleTemp)
			fmt.Printf("first-draft acceptance at temperature %g over %d positions: one-hot (argmax) drafts %.3f, drafts sampled from q %.3f\n",
				*sampleTemp, n, oneHot, sampled)
			r.SampledAt, r.OneHot, r.Sampled = *sampleTemp, oneHot, sampled
		}
		results = append(results, r)
	}
	if *jsonOut == "" {
		return nil
	}
	b, err := json.MarshalIndent(map[string]any{"target": t.ID, "prompts": *prompts, "max_new": *maxNew, "temperature": 0, "drafters": results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
}
