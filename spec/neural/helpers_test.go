package neural

import (
	"context"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/devtest"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// loopCfg is a small random model whose greedy text soon falls into loops.
var loopCfg = weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
	Vocab: 200, MaxSeq: 128, RopeTheta: 10000, RMSEps: 1e-5}

// loopPrompt repeats itself.
var loopPrompt = []int{1, 17, 42, 99, 5, 63, 7, 1, 17, 42, 99, 5, 63, 7, 1, 17, 42}

// loopDevice is the package's tests' device (devtest.Device).
func loopDevice(t testing.TB) *runtime.Device { return devtest.Device(t) }

// newDeviceModel puts w on the device with a feature slot per sequence (for the heads).
func newDeviceModel(t testing.TB, w *weights.LlamaWeights) *model.Model {
	return newDeviceModelKV(t, w, wgsl.F32)
}

// newDeviceModelKV is newDeviceModel with a KV cache of type kv.
func newDeviceModelKV(t testing.TB, w *weights.LlamaWeights, kv wgsl.WeightType) *model.Model {
	t.Helper()
	m, err := model.New(loopDevice(t), w, model.Options{PageSize: 8, PrefillChunk: 32, FeatureSlots: model.SlotPerSequence, KVType: kv, DraftQ: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

// openDrafter makes cfg's method on target model m the way the engine does (validate, open
// the checkpoint, load it next to m). The test's cleanup releases it.
func openDrafter(t testing.TB, cfg spec.Config, m *model.Model) (spec.Method, error) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var tc *weights.Config
	if m != nil {
		tc = &m.Cfg
	}
	ck, err := spec.Open(cfg, tc)
	if err != nil {
		return nil, err
	}
	meth, err := Load(ck, m)
	if err != nil {
		return nil, err
	}
	t.Cleanup(meth.Release)
	return meth, nil
}

// decode runs one request alone (drafting k tokens a step with method, fixed) on the device
// model m, or with m nil on the reference model of w, and checks its bookkeeping: the tokens
// emitted are those returned, the metrics add up, and every page comes back.
func decode(t *testing.T, w *weights.LlamaWeights, m *model.Model, method spec.Method, prompt []int, k, maxNew int,
	s batch.Sampling, stop []int) ([]int, spec.Metrics) {
	t.Helper()
	var target sched.Target = m
	if m == nil {
		target = ref.NewModel(w, 64, 8, batch.Limits{MaxSeqs: 16, MaxLogitRows: 64, MaxDraft: 8, StepRows: 32})
	}
	if k == 0 {
		method = nil
	}
	var emitted []int
	res := sched.Generate(target, method, sched.Options{}, &sched.Request{Ctx: context.Background(), Prompt: prompt,
		MaxNew: maxNew, Sampling: s, Stop: stop, K: k, FixedK: true,
		Emit: func(tok int) bool { emitted = append(emitted, tok); return true }})
	if res.Err != nil {
		t.Fatalf("k %d: %v", k, res.Err)
	}
	if !slices.Equal(res.Tokens, emitted) {
		t.Errorf("emitted %v, returned %v", emitted, res.Tokens)
	}
	met := res.Metrics
	if met.AcceptedTokens+met.Steps != met.EmittedTokens || met.AcceptedTokens > met.DraftTokens {
		t.Errorf("inconsistent metrics %+v", met)
	}
	if n := target.Pool().InUse(); n != 0 {
		t.Errorf("%d pages in use after the request", n)
	}
	return res.Tokens, met
}

// ngramMethod is the ngram method with vLLM's default sizes.
func ngramMethod() spec.Method { return &spec.Ngram{Min: 1, Max: 3} }
