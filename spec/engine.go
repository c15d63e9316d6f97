package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// DefaultModel is the folder, under .wspec/models, of the model used when none is named.
const DefaultModel = "stories15M"

// ErrPromptTooLong is returned when a prompt leaves no room in the context.
var ErrPromptTooLong = errors.New("prompt longer than the context")

// DefaultModelDir finds .wspec/models/stories15M walking up from the working directory and
// from the executable's directory (setup.sh puts it there).
func DefaultModelDir() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, ".wspec", "models", DefaultModel)
			if _, err := os.Stat(filepath.Join(p, "config.json")); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("default model not found (.wspec/models/%s); run ./setup.sh, or name a model folder with --model", DefaultModel)
}

// LoadOptions choose the adapter and the weight type.
type LoadOptions struct {
	Adapter string // "" (first), an index, a backend or an adapter type
	DType   string // "f32" (default) or "f16"
	// Speculative, when set, is the speculation Generate will be asked for: an eagle3
	// drafter needs the target made with residual snapshots (model.Options.AuxLayers),
	// which Load then asks for (otherwise Generate reloads the model for it).
	Speculative *Config
	// Progress, when set, is told how many bytes of weights have been read of how many.
	Progress weights.Progress
}

// Engine is a loaded model on a device with its tokenizer.
type Engine struct {
	Device    *runtime.Device
	Model     *model.Model
	Tokenizer *weights.Tokenizer
	Config    *weights.Config
	Dir       string
}

// Load reads a Hugging Face model folder (config.json, safetensors, tokenizer.json) and
// uploads it to the chosen adapter. An empty dir is the default model.
func Load(dir string, o LoadOptions) (*Engine, error) {
	if dir == "" {
		d, err := DefaultModelDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("model folder %s not found (want a Hugging Face folder: config.json, model.safetensors, tokenizer.json)", dir)
	}
	var wt wgsl.WeightType
	switch o.DType {
	case "", "f32":
		wt = wgsl.F32
	case "f16":
		wt = wgsl.F16
	default:
		return nil, fmt.Errorf("unknown --dtype %q (want f32 or f16)", o.DType)
	}
	tok, err := weights.LoadTokenizer(dir)
	if err != nil {
		return nil, err
	}
	host, err := weights.LoadLlama(dir, o.Progress)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() > host.Cfg.Vocab {
		return nil, fmt.Errorf("%s: tokenizer has %d tokens but the model's vocabulary is %d", dir, tok.VocabSize(), host.Cfg.Vocab)
	}
	dev, err := runtime.OpenDevice(runtime.AdapterChoice(o.Adapter))
	if err != nil {
		return nil, err
	}
	aux, err := EagleAuxLayers(o.Speculative, &host.Cfg)
	if err != nil {
		return nil, err
	}
	m, err := model.New(dev, host, model.Options{Weights: wt, AuxLayers: aux})
	if err != nil {
		return nil, err
	}
	cfg := host.Cfg
	return &Engine{Device: dev, Model: m, Tokenizer: tok, Config: &cfg, Dir: dir}, nil
}

// GenerateOptions are the sampling and speculation settings of one generation.
type GenerateOptions struct {
	MaxTokens   int     // new tokens at most (default 256, clipped to the context)
	Temperature float32 // 0: greedy
	TopP        float32 // 0 or 1: off
	TopK        int     // 0: off
	Seed        uint64
	Speculative *Config      // nil: no speculation
	OnText      func(string) // streamed text, as complete UTF-8
}

// Result is a finished generation.
type Result struct {
	PromptTokens []int
	Tokens       []int         // generated, without the stop token
	Text         string        // the generated text as streamed (it continues the prompt)
	Prefill      time.Duration // prompt processing up to the first token
	Decode       time.Duration // the rest
	Metrics      Metrics
}

// Generate encodes prompt, decodes up to MaxTokens new tokens (with speculation when asked)
// and streams the text.
func (e *Engine) Generate(prompt string, o GenerateOptions) (*Result, error) {
	ids := e.Tokenizer.Encode(prompt, e.Tokenizer.AddBOS())
	if len(ids) == 0 {
		return nil, fmt.Errorf("empty prompt")
	}
	if len(ids) >= e.Config.MaxSeq {
		return nil, fmt.Errorf("%w: %d tokens, the context is %d", ErrPromptTooLong, len(ids), e.Config.MaxSeq)
	}
	maxNew := o.MaxTokens
	if maxNew <= 0 {
		maxNew = 256
	}
	maxNew = min(maxNew, e.Config.MaxSeq-len(ids))
	var drafter Drafter
	k := 0
	if o.Speculative != nil {
		sc := *o.Speculative // validated (and defaults filled) on a copy
		if err := sc.Validate(); err != nil {
			return nil, err
		}
		o.Speculative = &sc
		if err := e.ensureAuxLayers(o.Speculative); err != nil {
			return nil, err
		}
		var err error
		env := Env{Vocab: e.Config.Vocab, MaxSeq: e.Config.MaxSeq, ModelDir: o.Speculative.Model, Device: e.Device, Target: e.Model}
		if drafter, err = NewDrafter(*o.Speculative, env); err != nil {
			return nil, err
		}
		if r, ok := drafter.(interface{ Release() }); ok {
			defer r.Release()
		}
		k = o.Speculative.NumSpeculativeTokens
	}
	sess := e.Model.NewSession()
	defer sess.Release()
	stream := weights.NewStreamDecoder(e.Tokenizer)
	res := &Result{PromptTokens: ids}
	start := time.Now()
	var first time.Time
	var text strings.Builder
	out := func(s string) {
		text.WriteString(s)
		if s != "" && o.OnText != nil {
			o.OnText(s)
		}
	}
	emit := func(tok int) bool {
		if first.IsZero() {
			first = time.Now()
		}
		out(stream.Push(tok))
		return true
	}
	smp := model.Sampling{Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, Seed: o.Seed}
	toks, metrics, err := Decode(sess, drafter, ids, k, maxNew, smp, e.Config.EOS, emit)
	if err != nil {
		return nil, err
	}
	out(stream.Flush())
	end := time.Now()
	if first.IsZero() {
		first = end
	}
	res.Tokens, res.Metrics = toks, metrics
	res.Text = text.String()
	res.Prefill, res.Decode = first.Sub(start), end.Sub(first)
	return res, nil
}
