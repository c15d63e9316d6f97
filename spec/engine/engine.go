// Package engine is wspec's entry point: a model loaded on a device with its tokenizer and,
// optionally, a speculative decoding method, and Generate. The CLI and the server stand on it.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/drafters"
	"github.com/wspec/wspec/spec/grammar"
	"github.com/wspec/wspec/spec/neural"
	"github.com/wspec/wspec/spec/sched"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/home"
	"github.com/wspec/wspec/weights/tokenizer"
)

// DefaultModel is the folder, under models/ in the wspec home, of the model used when none is
// named.
const DefaultModel = "stories15M"

// DefaultModelDir finds the default model in the wspec home folders (weights/home: an
// explicit $WSPEC_HOME, the user cache folder `wspec setup` fills, then .wspec in the working
// folder).
func DefaultModelDir() (string, error) {
	p, ok, tried := home.Find(filepath.Join("models", DefaultModel), "config.json")
	if !ok {
		return "", fmt.Errorf("the default model %s is in none of %s; run `wspec setup` (or ./setup.sh in the repository), or name a model folder with --model",
			DefaultModel, strings.Join(tried, ", "))
	}
	return p, nil
}

// Options choose the adapter, the weight type and the speculative method.
type Options struct {
	Adapter string // "" (first), an index, a backend or an adapter type
	DType   string // "auto" (default: f16 for a 16-bit checkpoint where the adapter has shader-f16), "f32" or "f16"
	// Speculative, when set, is the speculative method every generation uses by default (a
	// generation may turn it off or draft fewer tokens). Its checkpoint is read and checked
	// against the model's config.json before the model's weights are read.
	Speculative *spec.Config
	// Progress, when set, is told how many bytes of weights have been read of how many.
	Progress weights.Progress
	// FirstRun, when set, is called before the first step of each of the model's programs
	// (model.Options.FirstRun): the driver compiles its kernels then, which on a CPU adapter
	// takes seconds the first time on a machine (Mesa keeps them in its shader cache, by
	// default ~/.cache/mesa_shader_cache). It runs on the scheduler's goroutine.
	FirstRun func(what string) (done func())
	// Device, when set, is the device to load on (Adapter is then ignored); it is shared,
	// not owned: Close leaves it open. Another engine on it must not generate concurrently.
	Device *runtime.Device
	// OnStep, when set, is told about every step of the scheduler (metrics); it runs on the
	// scheduler's goroutine and must not block.
	OnStep func(sched.StepInfo)
	// Pages, when > 0, is the number of KV cache pages (model.Options.Pages; default: enough
	// for two full contexts). Fewer pages make requests queue, or be preempted, sooner.
	Pages int
	// NoPrefixCaching turns the prefix cache off (vLLM's --no-enable-prefix-caching): by
	// default the full KV pages of prompts and outputs are kept after their sequence ends and
	// reused by any later sequence that starts with the same tokens (chat turns, a shared
	// system prompt, the n choices of one request).
	NoPrefixCaching bool
	// Memory (see memory.go): MaxModelLen is each sequence's context (0: the model's, reduced
	// when one full sequence does not fit the KV cache); the KV cache is KVCacheMemory bytes,
	// or Pages pages of 16 tokens, or GPUMemoryUtilization (default 0.9) of the adapter's
	// memory less the weights and activations (on a CPU adapter, whose memory is the host's,
	// at most 4 GiB unless GPUMemoryUtilization is set); KVCacheDType is auto (the weights'),
	// f16 or f32 (vLLM's names).
	MaxModelLen          int
	KVCacheMemory        int64
	GPUMemoryUtilization float64
	KVCacheDType         string
	// MaxNumSeqs bounds the sequences one step runs (vLLM's --max-num-seqs; 0: 16, at most
	// MaxNumSeqsLimit), MaxNumBatchedTokens the rows (tokens of all sequences) of one step
	// (vLLM's --max-num-batched-tokens; 0: 128, else 17..8192, at least MaxNumSeqs).
	MaxNumSeqs          int
	MaxNumBatchedTokens int
}

// MaxNumSeqsLimit is the most sequences a step can run: the rows the sampler takes a step.
const MaxNumSeqsLimit = 64

// Engine is a model on a device with its tokenizer and optional speculative method.
//
// Contract:
//   - It is safe for concurrent use. Its scheduler (spec/sched) runs the generations of all
//     callers in shared steps (continuous batching): each gets exactly the output it gets
//     alone (the same kernels compute each row alike, and every sequence has its own random
//     key), while the device serves them together.
//   - Generate's context cancels within one model step; the sequence's KV pages are freed
//     and the tokens so far come back with FinishCancelled.
//   - Close cancels running generations, waits for them, and frees the drafter, the model
//     and the device. Every call after Close returns an error wrapping ErrClosed.
type Engine struct {
	dir   string
	dtype string
	cfg   weights.Config
	tok   *tokenizer.Tokenizer
	// chatTemplate is a GGUF file's chat template ("": a folder's, read by the server)
	chatTemplate string
	dev          *runtime.Device
	ownDev       bool // Close closes dev
	target       *model.Model
	method       spec.Method // nil: no speculation
	k            int         // the method's draft tokens per step (at most)
	cost         *spec.CostModel
	sched        *sched.Scheduler
	plan         MemoryPlan
	// the structured outputs' compiled grammars, over the tokenizer's vocabulary (made on
	// first use: the vocabulary's trie costs a pass over every token)
	grammarOnce  sync.Once
	grammarCache *grammar.Cache

	closeOnce sync.Once
	closed    atomic.Bool
}

// grammarCacheSize is how many compiled structured-output specs an engine keeps.
const grammarCacheSize = 64

// grammars is the engine's cache of compiled grammars.
func (e *Engine) grammars() *grammar.Cache {
	e.grammarOnce.Do(func() {
		e.grammarCache = grammar.NewCache(grammar.NewVocab(e.cfg.Vocab, e.tok.TokenBytes), grammarCacheSize)
	})
	return e.grammarCache
}

// Load reads a Hugging Face model folder (config.json, safetensors, tokenizer.json) and
// uploads it to the chosen adapter. An empty dir is the default model (DefaultModelDir). The
// options are checked here, once: the dtype, and the speculative config (Config.Validate),
// whose checkpoint is read and checked against the model's config.json before the model's
// weights are. A config naming no checkpoint takes the drafter shipped for the default model
// (spec/drafters), which is refused against another model.
func Load(dir string, o Options) (*Engine, error) {
	switch o.DType {
	case "", "auto", "f32", "f16":
	default:
		return nil, invalid("dtype", "dtype %q: want auto, f32 or f16", o.DType)
	}
	if o.Pages < 0 || o.Pages > MaxPages {
		return nil, invalid("num_gpu_blocks_override", "num_gpu_blocks_override %d: want 0 (the default) to %d", o.Pages, MaxPages)
	}
	switch {
	case o.MaxNumSeqs < 0 || o.MaxNumSeqs > MaxNumSeqsLimit:
		return nil, invalid("max_num_seqs", "max_num_seqs %d: want 1..%d (0: %d)", o.MaxNumSeqs, MaxNumSeqsLimit, model.DefaultMaxSeqs)
	case o.MaxNumBatchedTokens != 0 && (o.MaxNumBatchedTokens <= 16 || o.MaxNumBatchedTokens > 8192):
		return nil, invalid("max_num_batched_tokens", "max_num_batched_tokens %d: want 17..8192 (0: 128)", o.MaxNumBatchedTokens)
	case o.MaxNumBatchedTokens != 0 && o.MaxNumSeqs > o.MaxNumBatchedTokens:
		return nil, invalid("max_num_batched_tokens", "max_num_batched_tokens %d is less than max_num_seqs %d: a step could not hold one token of each", o.MaxNumBatchedTokens, o.MaxNumSeqs)
	}
	var sc *spec.Config
	if o.Speculative != nil {
		c := *o.Speculative
		if c.Model == "" && c.Mode != "" {
			var err error
			if c.Model, err = drafters.Dir(c.Mode); err != nil {
				return nil, err
			}
		}
		if err := c.Validate(); err != nil {
			return nil, &InvalidError{Param: "speculative_config", Msg: err.Error()}
		}
		sc = &c
	}
	if dir == "" {
		d, err := DefaultModelDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("model %s not found (want a Hugging Face folder: config.json, model.safetensors, tokenizer.json; or a GGUF file)", dir)
	}
	cfg, err := weights.ModelConfig(dir)
	if err != nil {
		return nil, err
	}
	var dck spec.Checkpoint // the drafter's, checked against the config before the target opens
	if sc != nil {
		if dck, err = spec.Open(*sc, cfg); err != nil {
			return nil, err
		}
	}
	wm, err := weights.OpenModel(dir)
	if err != nil {
		return nil, err
	}
	defer wm.Close()
	cfg = wm.Config
	e := &Engine{dir: dir, cfg: *cfg, tok: wm.Tokenizer, chatTemplate: wm.ChatTemplate}
	if sc != nil {
		if sc.Model != "" {
			// a drafter trained for another model is refused before the target loads
			if err := weights.CheckTargetModel(sc.Model, wm); err != nil {
				return nil, err
			}
		}
		e.k = sc.NumSpeculativeTokens
	}
	if e.dev, e.ownDev = o.Device, o.Device == nil; e.ownDev {
		if e.dev, err = runtime.OpenDevice(runtime.AdapterChoice(o.Adapter)); err != nil {
			return nil, err
		}
	}
	wt, err := weightType(o.DType, cfg, wm.Source, e.dev)
	if err != nil {
		e.release()
		return nil, err
	}
	e.dtype = wt.String()
	maxSeqs := cmp.Or(o.MaxNumSeqs, model.DefaultMaxSeqs)
	var needs spec.Needs
	if dck != nil {
		needs = dck.Needs()
	}
	plan, kvType, err := planMemory(cfg, wm.Source, wt, e.dev, o, maxSeqs, max(model.DefaultMaxDraft, e.k), needs)
	if err != nil {
		e.release()
		return nil, err
	}
	e.plan = plan
	mcfg := *cfg
	mcfg.MaxSeq = plan.MaxModelLen
	e.cfg.MaxSeq = plan.MaxModelLen
	mo := model.Options{Weights: wt, KVType: kvType, Pages: plan.Pages, FirstRun: o.FirstRun, Progress: o.Progress,
		MaxSeqs: maxSeqs, PrefillChunk: o.MaxNumBatchedTokens, MaxDraft: max(model.DefaultMaxDraft, e.k)}
	if dck != nil {
		neural.ModelOptions(&mo, dck.Needs())
	}
	if e.target, err = model.Load(e.dev, mcfg, wm.Source, mo); err != nil {
		e.release()
		return nil, err
	}
	if types := e.target.WeightTypes(); len(types) > 1 || types[0] != wt {
		var names []string
		for _, t := range types {
			names = append(names, t.String())
		}
		e.dtype = strings.Join(names, "+") // a quantized file's types, e.g. q4_k+q6_k
	}
	if !o.NoPrefixCaching {
		e.target.Pool().EnablePrefixCaching()
	}
	if dck != nil {
		if e.method, err = neural.Load(dck, e.target); err != nil {
			e.release()
			return nil, err
		}
		if err := e.warm(); err != nil {
			e.release()
			return nil, err
		}
		if err := e.warmDrafter(); err != nil {
			e.release()
			return nil, err
		}
		if e.cost, err = e.calibrate(); err != nil {
			e.release()
			return nil, err
		}
	}
	e.sched = sched.New(e.target, e.method, sched.Options{Cost: e.cost, OnStep: o.OnStep})
	go e.sched.Run()
	return e, nil
}

// release frees what the engine holds on the device (for Load's failures and Close).
func (e *Engine) release() {
	if e.method != nil {
		e.method.Release()
		e.method = nil
	}
	if e.target != nil {
		e.target.Release()
		e.target = nil
	}
	if e.ownDev {
		e.dev.Close()
	} else {
		e.dev.Reclaim() // the device stays: free the released buffers' memory now
	}
	e.dev = nil
}

// Close cancels the running generations, waits for them and frees the speculative method,
// the model and the device. Closing twice is harmless.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		e.sched.Close()
		e.release()
	})
	return nil
}

func (e *Engine) isClosed() bool { return e.closed.Load() }

// Info describes a loaded engine.
type Info struct {
	Dir        string         // the model folder, or GGUF file
	Adapter    string         // the adapter's name
	DType      string         // f32 or f16
	Dispatches int            // dispatches of one decode step
	Method     string         // the speculative method, "" for none
	K          int            // its draft tokens per step
	Config     weights.Config // Config.MaxSeq is the context the engine gives a sequence
	Memory     MemoryPlan
	// ChatTemplate is a GGUF file's chat template ("" for a folder, whose tokenizer_config.json
	// or chat_template.jinja holds it).
	ChatTemplate string
	// PrefixCaching says whether full KV pages are kept and shared across sequences.
	PrefixCaching bool
	// Features are the device features the kernels use: "subgroups" (else their workgroup
	// paths), "shader-f16", "timestamp-query".
	Features []string
}

// Info describes the engine (it is not an error to ask after Close).
func (e *Engine) Info() Info {
	i := Info{Dir: e.dir, DType: e.dtype, K: e.k, Config: e.cfg, Memory: e.plan, ChatTemplate: e.chatTemplate}
	if e.method != nil {
		i.Method = e.method.Name()
	}
	if e.dev != nil {
		i.Adapter = e.dev.Adapter.Info.Name()
		for _, f := range []struct {
			on   bool
			name string
		}{{e.dev.HasSubgroups && !e.dev.ForceNoSubgroups, "subgroups"}, {e.dev.HasF16, "shader-f16"}, {e.dev.HasTimestamp, "timestamp-query"}} {
			if f.on {
				i.Features = append(i.Features, f.name)
			}
		}
	}
	if e.target != nil {
		i.Dispatches = e.target.Dispatches()
		i.PrefixCaching = e.target.Pool().PrefixCaching()
	}
	return i
}

// Tokenizer is the model's tokenizer.
func (e *Engine) Tokenizer() *tokenizer.Tokenizer { return e.tok }

// BenchDecode times n greedy decode steps after prompt (see model.BenchDecode), between the
// scheduler's steps.
func (e *Engine) BenchDecode(ctx context.Context, prompt string, n int) (model.DecodeBench, error) {
	if e.isClosed() {
		return model.DecodeBench{}, ErrClosed
	}
	var b model.DecodeBench
	err := e.sched.Do(func() (err error) {
		b, err = e.target.BenchDecode(e.tok.Encode(prompt, e.tok.AddBOS()), n)
		return err
	})
	if errors.Is(err, sched.ErrClosed) {
		return b, ErrClosed
	}
	return b, err
}

// BenchVerify times target steps that verify each of ks drafts after prompt against plain
// decode steps, rounds of each, taking turns (model.BenchVerify).
func (e *Engine) BenchVerify(ctx context.Context, prompt string, ks []int, rounds int) ([]model.VerifyCost, error) {
	if e.isClosed() {
		return nil, ErrClosed
	}
	var v []model.VerifyCost
	err := e.sched.Do(func() (err error) {
		v, err = e.target.BenchVerify(e.tok.Encode(prompt, e.tok.AddBOS()), ks, rounds)
		return err
	})
	if errors.Is(err, sched.ErrClosed) {
		return nil, ErrClosed
	}
	return v, err
}

// Stats are the engine's load: the scheduler's running and waiting sequences and the KV
// page pool's use.
type Stats struct {
	Running, Waiting int
	PagesUsed, Pages int
}

// Stats returns the engine's current load, read between two steps (zero after Close).
func (e *Engine) Stats() Stats {
	var st Stats
	if e.isClosed() {
		return st
	}
	e.sched.Do(func() error {
		s := e.sched.Stats()
		st = Stats{Running: s.Running, Waiting: s.Waiting, PagesUsed: e.target.Pool().InUse(), Pages: e.target.Pool().Pages()}
		return nil
	})
	return st
}
