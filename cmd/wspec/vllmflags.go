package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/reasoning"
	"github.com/wspec/wspec/spec/serve"
	"github.com/wspec/wspec/spec/toolcall"
)

// vllmFlags are the flags of `vllm serve` that `wspec serve` takes besides its own, so that a
// vLLM command line carries over: the ones that mean something here are applied, harmless ones
// are accepted with a one-line note, and ones that cannot hold on one device are refused with
// the reason.
type vllmFlags struct {
	fs                   *pflag.FlagSet
	maxNumSeqs           *int
	maxNumBatchedTokens  *int
	seed                 *uint64
	generationConfig     *string
	maxLogprobs          *int
	toolCallParser       *string
	enableAutoToolChoice *bool
	reasoningParser      *string
	parallel             map[string]*int // tensor, pipeline and data parallel sizes
	tokenizer            *string
	blockSize            *int
	uvicornAccessLog     *bool
}

// harmlessFlags are vLLM flags that change nothing on one device in wspec, with why.
var harmlessFlags = []struct{ name, kind, why string }{
	{"trust-remote-code", "bool", "wspec runs no code from model folders"},
	{"disable-log-requests", "bool", "wspec logs no request contents"},
	{"enable-log-requests", "bool", "wspec logs no request contents"},
	{"disable-log-stats", "bool", "wspec logs no periodic stats (see /metrics)"},
	{"enforce-eager", "bool", "wspec has no CUDA graphs"},
	{"enable-chunked-prefill", "bool", "prefill is always chunked (--max-num-batched-tokens)"},
	{"disable-fastapi-docs", "bool", "wspec serves no API docs"},
	{"uvicorn-log-level", "string", "wspec has one log: stderr"},
	{"log-level", "string", "wspec has one log: stderr"},
	{"load-format", "string", "wspec reads safetensors and GGUF as it finds them"},
	{"distributed-executor-backend", "string", "wspec runs on one device"},
	{"tokenizer-mode", "string", "wspec reads tokenizer.json (or the GGUF file's)"},
	{"swap-space", "string", "wspec preempts by recomputation, without swap"},
	{"device", "string", "choose the adapter with --adapter"},
}

func addVLLMFlags(fs *pflag.FlagSet) *vllmFlags {
	v := &vllmFlags{fs: fs, parallel: map[string]*int{}}
	v.maxNumSeqs = fs.Int("max-num-seqs", 0, fmt.Sprintf("sequences one step runs at most (default %d; at most %d)", 16, engine.MaxNumSeqsLimit))
	v.maxNumBatchedTokens = fs.Int("max-num-batched-tokens", 0, "tokens (of all sequences) one step runs at most: the prefill chunk (default 128)")
	v.seed = fs.Uint64("seed", 0, "seed of the requests that set none, in order (default: random)")
	v.generationConfig = fs.String("generation-config", "auto", "sampling defaults: auto (the model's generation_config.json), vllm (none: OpenAI's) or a folder holding a generation_config.json")
	v.maxLogprobs = fs.Int("max-logprobs", engine.MaxTopLogprobs, "most logprobs or top_logprobs a request may ask for")
	v.toolCallParser = fs.String("tool-call-parser", "", "read tool calls out of replies: "+strings.Join(toolcall.Parsers(), ", "))
	v.enableAutoToolChoice = fs.Bool("enable-auto-tool-choice", false, "let requests use tool_choice \"auto\" (needs --tool-call-parser)")
	v.reasoningParser = fs.String("reasoning-parser", "", "split replies into reasoning_content and content: "+strings.Join(reasoning.Parsers(), ", "))
	for _, p := range []struct{ name, short string }{{"tensor-parallel-size", "tp"}, {"pipeline-parallel-size", "pp"}, {"data-parallel-size", "dp"}} {
		v.parallel[p.name] = fs.Int(p.name, 1, "vLLM's "+p.name+": 1 (wspec runs on one device)")
		fs.Lookup(p.name).Hidden = true
		// vLLM's short forms -tp, -pp, -dp are not single letters, which pflag cannot take as
		// shorthands; they are normalized to the long names (see normalizeVLLM).
	}
	v.tokenizer = fs.String("tokenizer", "", "vLLM's --tokenizer: only the model's own (wspec reads the model folder's tokenizer)")
	v.blockSize = fs.Int("block-size", 16, "vLLM's --block-size: 16 (wspec's KV pages hold 16 tokens)")
	v.uvicornAccessLog = fs.Bool("disable-uvicorn-access-log", false, "the same as --disable-access-log")
	for _, f := range []string{"tokenizer", "block-size", "disable-uvicorn-access-log"} {
		fs.Lookup(f).Hidden = true
	}
	for _, h := range harmlessFlags {
		if h.kind == "bool" {
			fs.Bool(h.name, false, "vLLM's; accepted and ignored: "+h.why)
		} else {
			fs.String(h.name, "", "vLLM's; accepted and ignored: "+h.why)
		}
		fs.Lookup(h.name).Hidden = true
	}
	return v
}

// normalizeVLLM rewrites vLLM's multi-letter short flags (-tp 1) to their long names.
func normalizeVLLM(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for short, long := range map[string]string{"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size"} {
			if a == short || strings.HasPrefix(a, short+"=") {
				a = long + strings.TrimPrefix(a, short)
			}
		}
		out[i] = a
	}
	return out
}

// apply checks the flags, writes a note per harmless flag set, and fills the engine's and the
// server's options. model is the model folder (or GGUF file, or "" for the default model),
// repo the Hugging Face repository it was fetched from ("" if none).
func (v *vllmFlags) apply(notes io.Writer, model, repo string, eo *engine.Options, sc *serve.Config) error {
	for name, p := range v.parallel {
		if *p != 1 {
			return fmt.Errorf("--%s %d: wspec runs a model on one device (only 1)", name, *p)
		}
		if v.fs.Changed(name) {
			fmt.Fprintf(notes, "note: --%s 1: one device, as always\n", name)
		}
	}
	for _, h := range harmlessFlags {
		if v.fs.Changed(h.name) {
			fmt.Fprintf(notes, "note: --%s accepted and ignored: %s\n", h.name, h.why)
		}
	}
	if *v.blockSize != 16 {
		return fmt.Errorf("--block-size %d: wspec's KV pages hold 16 tokens (only 16)", *v.blockSize)
	}
	if t := *v.tokenizer; t != "" && filepath.Clean(t) != filepath.Clean(model) && t != repo {
		own := model
		if own == "" {
			own = "the default model's"
		}
		return fmt.Errorf("--tokenizer %s: wspec uses the model's own tokenizer (%s)", t, own)
	}
	seqs := *v.maxNumSeqs
	if seqs > engine.MaxNumSeqsLimit {
		fmt.Fprintf(notes, "note: --max-num-seqs %d: a step runs at most %d sequences here; using %d\n", seqs, engine.MaxNumSeqsLimit, engine.MaxNumSeqsLimit)
		seqs = engine.MaxNumSeqsLimit
	}
	if seqs < 0 || (v.fs.Changed("max-num-seqs") && seqs == 0) {
		return fmt.Errorf("--max-num-seqs %d: want at least 1", *v.maxNumSeqs)
	}
	if *v.maxNumBatchedTokens < 0 || (v.fs.Changed("max-num-batched-tokens") && *v.maxNumBatchedTokens == 0) {
		return fmt.Errorf("--max-num-batched-tokens %d: want at least 17", *v.maxNumBatchedTokens)
	}
	eo.MaxNumSeqs, eo.MaxNumBatchedTokens = seqs, *v.maxNumBatchedTokens
	if v.fs.Changed("seed") {
		seed := *v.seed
		sc.Seed = &seed
	}
	if *v.maxLogprobs < 0 || *v.maxLogprobs > engine.MaxTopLogprobs {
		return fmt.Errorf("--max-logprobs %d: want 0..%d", *v.maxLogprobs, engine.MaxTopLogprobs)
	}
	sc.MaxLogprobs = *v.maxLogprobs
	if p := *v.toolCallParser; p != "" && !toolcall.Valid(p) {
		return fmt.Errorf("--tool-call-parser %q: want one of %s", p, strings.Join(toolcall.Parsers(), ", "))
	}
	if *v.enableAutoToolChoice && *v.toolCallParser == "" {
		return fmt.Errorf("--enable-auto-tool-choice needs --tool-call-parser (one of %s)", strings.Join(toolcall.Parsers(), ", "))
	}
	if p := *v.reasoningParser; p != "" && !reasoning.Valid(p) {
		return fmt.Errorf("--reasoning-parser %q: want one of %s", p, strings.Join(reasoning.Parsers(), ", "))
	}
	sc.ToolCallParser, sc.EnableAutoToolChoice, sc.ReasoningParser = *v.toolCallParser, *v.enableAutoToolChoice, *v.reasoningParser
	return nil
}

// generationDefaults reads the sampling defaults --generation-config names, once the model's
// folder is known.
func (v *vllmFlags) generationDefaults(notes io.Writer, modelDir string) (serve.SamplingDefaults, error) {
	dir := modelDir
	switch g := *v.generationConfig; g {
	case "vllm":
		return serve.SamplingDefaults{}, nil
	case "auto", "":
	default:
		// a folder named is read, or the server does not start: ignoring it would serve
		// other defaults than the ones asked for
		if _, err := os.Stat(filepath.Join(g, "generation_config.json")); err != nil {
			return serve.SamplingDefaults{}, fmt.Errorf("--generation-config %s: %w (want auto, vllm or a folder holding a generation_config.json)", g, err)
		}
		dir = g
	}
	d, err := serve.ReadGenerationConfig(dir)
	if err != nil {
		return d, fmt.Errorf("--generation-config: %w", err)
	}
	if d.Set() {
		fmt.Fprintf(notes, "sampling defaults from %s: %s (a request's own values win; --generation-config vllm for none)\n",
			filepath.Join(dir, "generation_config.json"), d)
	}
	return d, nil
}

// secondsFlag is a duration given as seconds (vLLM's --shutdown-timeout 30) or with a unit
// (30s, 2m).
type secondsFlag struct{ d *time.Duration }

func (s secondsFlag) String() string {
	if s.d == nil {
		return ""
	}
	return s.d.String()
}

func (s secondsFlag) Set(v string) error {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 || n > 1e9 {
			return fmt.Errorf("%s: want 0 or more seconds", v)
		}
		*s.d = time.Duration(n * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%s: want seconds (30) or a duration (30s, 2m)", v)
	}
	*s.d = d
	return nil
}

func (secondsFlag) Type() string { return "seconds" }
