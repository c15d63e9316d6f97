package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/selftest"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/sched"
)

// The engine as the page's JavaScript sees it: globalThis.wspecGo, whose functions take and
// return JSON strings (the ES module wspec.js wraps them) and return promises. Each call runs
// in its own goroutine, so the Go runtime can wait on the GPU while the page's event loop
// runs.

// bridge holds the engines a page has loaded and the generations it may cancel.
type bridge struct {
	mu      sync.Mutex
	engines map[int]*pageEngine
	cancels map[int]context.CancelFunc
	next    int
}

type pageEngine struct {
	e  *engine.Engine
	mu sync.Mutex // one generation at a time, as the page runs them

	running sync.Mutex         // guards the two below
	onStep  js.Value           // the running generation's step callback
	cancel  context.CancelFunc // stops the running generation (close)
}

// Register installs globalThis.wspecGo and calls globalThis.wspecReady, when the page defined
// it, to say the functions are there.
func Register() {
	b := &bridge{engines: map[int]*pageEngine{}, cancels: map[int]context.CancelFunc{}}
	api := js.Global().Get("Object").New()
	for name, fn := range map[string]func([]js.Value) (any, error){
		"load": b.load, "generate": b.generate, "close": b.close, "selftest": b.selftest, "info": b.info,
	} {
		api.Set(name, promiseFunc(fn))
	}
	api.Set("cancel", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) == 0 || args[0].Type() != js.TypeNumber {
			return nil
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if c, ok := b.cancels[args[0].Int()]; ok {
			c()
		}
		return nil
	}))
	js.Global().Set("wspecGo", api)
	if ready := js.Global().Get("wspecReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
}

// promiseFunc wraps fn as a JS function returning a promise, run on its own goroutine; a Go
// error rejects the promise with an Error of its text.
func promiseFunc(fn func([]js.Value) (any, error)) js.Func {
	return js.FuncOf(func(_ js.Value, args []js.Value) any {
		args = append([]js.Value(nil), args...)
		executor := js.FuncOf(func(_ js.Value, pa []js.Value) any {
			resolve, reject := pa[0], pa[1]
			go func() {
				defer func() {
					if r := recover(); r != nil {
						reject.Invoke(js.Global().Get("Error").New(fmt.Sprintf("wspec: internal error: %v", r)))
					}
				}()
				v, err := fn(args)
				if err != nil {
					reject.Invoke(js.Global().Get("Error").New(err.Error()))
					return
				}
				resolve.Invoke(v)
			}()
			return nil
		})
		defer executor.Release()
		return js.Global().Get("Promise").New(executor)
	})
}

// LoadOptions are load()'s options, with the names of vLLM's engine arguments.
type LoadOptions struct {
	Speculative          *spec.Config `json:"speculative_config"`
	DType                string       `json:"dtype"`
	KVCacheDType         string       `json:"kv_cache_dtype"`
	MaxModelLen          int          `json:"max_model_len"`
	NumGPUBlocksOverride int          `json:"num_gpu_blocks_override"`
	EnablePrefixCaching  *bool        `json:"enable_prefix_caching"` // default true
}

// load(dir, optionsJSON) loads the model mounted at dir and returns its id and Info as JSON.
func (b *bridge) load(args []js.Value) (any, error) {
	if len(args) < 2 {
		return nil, errors.New("load(dir, optionsJSON)")
	}
	var o LoadOptions
	if err := strictJSON(args[1].String(), &o); err != nil {
		return nil, fmt.Errorf("load options: %w", err)
	}
	pe := &pageEngine{}
	e, err := engine.Load(args[0].String(), engine.Options{Speculative: o.Speculative, DType: o.DType, KVCacheDType: o.KVCacheDType,
		MaxModelLen: o.MaxModelLen, Pages: o.NumGPUBlocksOverride, NoPrefixCaching: o.EnablePrefixCaching != nil && !*o.EnablePrefixCaching,
		OnStep: pe.step})
	if err != nil {
		return nil, err
	}
	pe.e = e
	b.mu.Lock()
	b.next++
	id := b.next
	b.engines[id] = pe
	b.mu.Unlock()
	return marshal(map[string]any{"id": id, "info": describe(e)})
}

func (b *bridge) engine(v js.Value) (*pageEngine, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pe, ok := b.engines[v.Int()]
	if !ok {
		return nil, engine.ErrClosed
	}
	return pe, nil
}

// step forwards a scheduler step to the running generation's callback.
func (pe *pageEngine) step(s sched.StepInfo) {
	pe.running.Lock()
	onStep := pe.onStep
	pe.running.Unlock()
	if onStep.Type() != js.TypeFunction {
		return
	}
	j, _ := json.Marshal(map[string]any{"rows": s.Rows, "decode_rows": s.Rows - s.PrefillRows, "drafts": s.Drafts, "accepted": s.Accepted,
		"accepted_at": s.AcceptedAt, "ms": float64(s.Time.Microseconds()) / 1000})
	onStep.Invoke(string(j))
}

// generate(id, requestID, prompt, optionsJSON, onText, onStep) generates after prompt,
// calling onText with each piece of text and onStep with each step's statistics (JSON), and
// returns the result as JSON. cancel(requestID) stops it.
func (b *bridge) generate(args []js.Value) (any, error) {
	if len(args) < 6 {
		return nil, errors.New("generate(id, requestID, prompt, optionsJSON, onText, onStep)")
	}
	pe, err := b.engine(args[0])
	if err != nil {
		return nil, err
	}
	o, err := generateOptions(args[3].String())
	if err != nil {
		return nil, err
	}
	if args[2].Type() != js.TypeString || args[4].Type() != js.TypeFunction {
		return nil, errors.New("generate: the prompt must be a string and onText a function")
	}
	onText := args[4]
	o.OnText = func(s string) { onText.Invoke(s) }
	ctx, cancel := context.WithCancel(context.Background())
	rid := args[1].Int()
	b.mu.Lock()
	b.cancels[rid] = cancel
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.cancels, rid)
		b.mu.Unlock()
		cancel()
	}()
	pe.mu.Lock()
	defer pe.mu.Unlock()
	pe.running.Lock()
	pe.onStep, pe.cancel = args[5], cancel
	pe.running.Unlock()
	defer func() {
		pe.running.Lock()
		pe.onStep, pe.cancel = js.Undefined(), nil
		pe.running.Unlock()
	}()
	res, err := pe.e.Generate(ctx, args[2].String(), o)
	if err != nil {
		return nil, err
	}
	return marshal(result(res))
}

// close(id) stops the engine's running generation, closes it and frees its device memory.
func (b *bridge) close(args []js.Value) (any, error) {
	b.mu.Lock()
	pe, ok := b.engines[args[0].Int()]
	delete(b.engines, args[0].Int())
	b.mu.Unlock()
	if ok {
		pe.running.Lock()
		if pe.cancel != nil {
			pe.cancel()
		}
		pe.running.Unlock()
		pe.mu.Lock()
		defer pe.mu.Unlock()
		return nil, pe.e.Close()
	}
	return nil, nil
}

// info(id) is the engine's Info as JSON.
func (b *bridge) info(args []js.Value) (any, error) {
	pe, err := b.engine(args[0])
	if err != nil {
		return nil, err
	}
	return marshal(describe(pe.e))
}

func marshal(v any) (any, error) {
	j, err := json.Marshal(v)
	return string(j), err
}

// selftest(optionsJSON) runs the portability suite's cases ({"filter": "...", "full": false,
// "per_variant": 0}, as selftest.Options)
// on the page's adapter against their pure-Go references and returns the report as JSON.
func (b *bridge) selftest(args []js.Value) (any, error) {
	var o struct {
		Filter     string `json:"filter"`
		Full       bool   `json:"full"`
		PerVariant int    `json:"per_variant"`
	}
	if len(args) > 0 {
		if err := strictJSON(args[0].String(), &o); err != nil {
			return nil, fmt.Errorf("selftest options: %w", err)
		}
	}
	d, err := runtime.OpenDevice("")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return marshal(selftest.NewReport(d, selftest.Options{Filter: o.Filter, Full: o.Full, PerVariant: o.PerVariant}))
}

// result is a generation's result as the page reads it.
func result(r *engine.Result) map[string]any {
	m := r.Metrics
	return map[string]any{
		"text": r.Text, "tokens": r.Tokens, "prompt_tokens": len(r.PromptTokens), "finish_reason": string(r.Finish),
		"prefill_ms": float64(r.Prefill.Microseconds()) / 1000, "decode_ms": float64(r.Decode.Microseconds()) / 1000,
		"steps": m.Steps, "drafting_steps": m.Drafts, "draft_tokens": m.DraftTokens, "accepted_tokens": m.AcceptedTokens,
		"acceptance_rate": m.AcceptanceRate(), "mean_acceptance_length": m.MeanAcceptanceLength(),
		"accepted_per_position": m.AcceptedPerPosition,
	}
}

// describe is what the page shows of an engine: the model, the adapter, the speculation.
func describe(e *engine.Engine) map[string]any {
	i := e.Info()
	return map[string]any{"model": i.Dir, "adapter": i.Adapter, "dtype": i.DType, "dispatches": i.Dispatches,
		"method": i.Method, "k": i.K, "max_model_len": i.Config.MaxSeq, "features": i.Features}
}
