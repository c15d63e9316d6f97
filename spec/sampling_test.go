package spec

import (
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// distDrafter drafts from a fixed q unlike the target's p (a softmax of random logits).
func distDrafter(seed uint64) Drafter { return newStochasticDrafter(distCfg.Vocab, 9, 1, seed) }

func fakeTargets(w *weights.LlamaWeights, broken string) func() (Target, func()) {
	return func() (Target, func()) {
		f := newFakeTarget(w)
		f.broken = broken
		return f, func() {}
	}
}

// On the fake target (the device's maths in pure Go), 10^4 speculative samples (k = 3, drafts
// from q with has_q) match the exact distribution and plain sampling; two broken samplers fail.
func TestSpeculativeDistribution(t *testing.T) {
	const N = 10000
	w := distWeights()
	for _, s := range distSettings {
		p := ref.SamplingParams{Temperature: s.Temperature, TopP: s.TopP}
		exact := exactJoint(w, p)
		plain := sampleJoint(t, N, 1<<32, s, 0, fakeTargets(w, ""), nil)
		spec := sampleJoint(t, N, 2<<32, s, 3, fakeTargets(w, ""), distDrafter)
		for name, counts := range map[string][]float64{"plain": plain, "speculative": spec} {
			r := compare(counts, exact)
			t.Logf("%+v %s: %v", s, name, r)
			if !r.ok() {
				t.Errorf("%+v: %s sampling is not the target's distribution: %v", s, name, r)
			}
		}
		chi2, chi2Max, tv, tvMax := twoSample(plain, spec, exact)
		t.Logf("%+v plain vs speculative: chi2 %.1f (max %.1f), TV(t1,t2) %.4f (max %.4f)", s, chi2, chi2Max, tv, tvMax)
		if chi2 > chi2Max || tv > tvMax {
			t.Errorf("%+v: plain and speculative samples differ", s)
		}
		for _, broken := range []string{"accept-all", "recover-from-p", "keys-off-by-one"} {
			r := compare(sampleJoint(t, N, 3<<32, s, 3, fakeTargets(w, broken), distDrafter), exact)
			t.Logf("%+v broken %s: %v", s, broken, r)
			if r.ok() {
				t.Errorf("%+v: the %s sampler passed the check: %v", s, broken, r)
			}
		}
	}
}

// The device's sampler (has_q, k = 2) gives the exact distribution too, with fewer samples as
// each costs a few device forward passes (about 2 ms on lavapipe); the thresholds scale with N,
// and the broken samplers still fail at that N.
func TestSpeculativeDistributionDevice(t *testing.T) {
	const N = 5000
	w := distWeights()
	m := newDeviceModel(t, w)
	targets := func() (Target, func()) { s := m.NewSession(); return s, s.Release }
	for _, s := range distSettings {
		exact := exactJoint(w, ref.SamplingParams{Temperature: s.Temperature, TopP: s.TopP})
		start := time.Now()
		r := compare(sampleJoint(t, N, 5<<32, s, 2, targets, distDrafter), exact)
		t.Logf("%+v device, %d samples in %v: %v", s, N, time.Since(start).Round(time.Millisecond), r)
		if !r.ok() {
			t.Errorf("%+v: the device's speculative sampling is not the target's distribution: %v", s, r)
		}
		for _, broken := range []string{"recover-from-p", "keys-off-by-one"} {
			r := compare(sampleJoint(t, N, 5<<32, s, 2, fakeTargets(w, broken), distDrafter), exact)
			t.Logf("%+v broken %s, %d samples: %v", s, broken, N, r)
			if r.ok() {
				t.Errorf("%+v: the %s sampler passed the check at N = %d: %v", s, broken, N, r)
			}
		}
	}
	if m.Pool.InUse() != 0 {
		t.Errorf("%d pages in use after the sessions were released", m.Pool.InUse())
	}
}
