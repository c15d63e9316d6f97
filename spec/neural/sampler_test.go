package neural

import (
	"slices"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched/schedtest"
	"github.com/wspec/wspec/wgsl"
)

// The device's sampler, with drafts sampled from a peaked q with the target's keys (k = 2)
// and verified one-hot, draws from the exact distribution, through the scheduler as it serves (many sequences per
// step), with an f32 and an f16 KV cache (the drafts are verified against the same cache as
// the rest); the thresholds scale with N, and the broken samplers still fail at that N.
func TestSpeculativeDistributionDevice(t *testing.T) {
	for _, kv := range []wgsl.WeightType{wgsl.F32, wgsl.F16} {
		t.Run(kv.String(), func(t *testing.T) { speculativeDistributionDevice(t, kv) })
	}
}

func speculativeDistributionDevice(t *testing.T, kv wgsl.WeightType) {
	const N = 4000
	w := schedtest.DistWeights()
	m := newDeviceModelKV(t, w, kv)
	drafter := schedtest.NewStochastic(schedtest.DistConfig.Vocab, 9, 3)
	for _, s := range schedtest.DistSettings {
		exact := schedtest.ExactJoint(w, kernelref.SamplingParams{Temperature: s.Temperature, TopP: s.TopP})
		start := time.Now()
		counts, err := schedtest.SampleJoint(m, drafter, N, 5<<32, s, 2)
		if err != nil {
			t.Fatal(err)
		}
		r := schedtest.Compare(counts, exact)
		t.Logf("%+v device, %d samples in %v: %v", s, N, time.Since(start).Round(time.Millisecond), r)
		if !r.OK() {
			t.Errorf("%+v: the device's speculative sampling is not the target's distribution: %v", s, r)
		}
		if kv != wgsl.F32 {
			continue // the broken samplers run on the reference, which has no f16 cache
		}
		for _, broken := range []string{"recover-from-p", "keys-off-by-one"} {
			rm := ref.NewModel(w, 400, 8, batch.Limits{MaxSeqs: 16, MaxLogitRows: 64, MaxDraft: 8, StepRows: 128})
			rm.Verify = schedtest.Broken[broken]
			counts, err := schedtest.SampleJoint(rm, drafter, N, 5<<32, s, 2)
			if err != nil {
				t.Fatal(err)
			}
			if r := schedtest.Compare(counts, exact); r.OK() {
				t.Errorf("%+v: the %s sampler passed the check at N = %d: %v", s, broken, N, r)
			}
		}
	}
	if n := m.Pool().InUse(); n != 0 {
		t.Errorf("%d pages in use after the requests", n)
	}
}

// Sampled speculative decoding on the device gives exactly the reference model's tokens
// (same maths, same random keys), with a one-hot drafter (ngram) and with drafts sampled
// from q.
func TestSampledDeviceMatchesReference(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 2)
	m := newDeviceModel(t, w)
	settings := []batch.Sampling{{Temperature: 1, TopP: 0.9}, {Temperature: 0.7, TopK: 20}, {Temperature: 1.3}}
	for si, s := range settings {
		for seed := uint64(1); seed <= 4; seed++ {
			s.Seed, s.Choice = seed*1000+uint64(si), uint32(seed%3)
			for name, k := range map[string]int{"plain": 0, "ngram": 4, "stochastic": 4} {
				var meth spec.Method = ngramMethod()
				if name == "stochastic" {
					meth = schedtest.NewStochastic(loopCfg.Vocab, 3, 1)
				}
				dev, _ := decode(t, w, m, meth, loopPrompt, k, 24, s, nil)
				refTok, _ := decode(t, w, nil, meth, loopPrompt, k, 24, s, nil)
				if !slices.Equal(dev, refTok) {
					t.Errorf("%+v %s: device %v, reference %v", s, name, dev, refTok)
				}
			}
		}
	}
}

// Structured outputs on the device: each row masked after the drafts before it, a draft's q
// renormalised under its row's mask, drafts cut where they leave the grammar: the constrained
// output, with drafts sampled from a q over every token with text (k = 2), has the
// constrained target's exact distribution.
func TestConstrainedDistributionDevice(t *testing.T) {
	const N = 4000
	w := schedtest.DistWeights()
	m := newDeviceModelKV(t, w, wgsl.F32)
	g := schedtest.DistGrammar()
	q := make([]float32, schedtest.DistConfig.Vocab)
	for i := range q[:len(q)-1] {
		q[i] = 1 / float32(len(q)-1)
	}
	drafter := &schedtest.Stochastic{Q: q}
	for _, s := range schedtest.DistSettings {
		exact := schedtest.ExactJointGrammar(w, kernelref.SamplingParams{Temperature: s.Temperature, TopP: s.TopP}, g)
		counts, err := schedtest.SampleJointGrammar(m, drafter, N, 9<<32, s, 2, g)
		if err != nil {
			t.Fatal(err)
		}
		r := schedtest.Compare(counts, exact)
		t.Logf("%+v device, constrained: %v", s, r)
		if !r.OK() {
			t.Errorf("%+v: the device's constrained speculative sampling is not the constrained target's distribution: %v", s, r)
		}
	}
	if n := m.Pool().InUse(); n != 0 {
		t.Errorf("%d pages in use after the requests", n)
	}
}
