package neural

import (
	"testing"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched/schedtest"
	"github.com/wspec/wspec/weights"
)

// qSpy passes a method's proposals through, counting those that came with q; with uniform
// set, it replaces each q row by the uniform distribution (a q the drafts were not drawn
// from), which the rejection sampler then verifies against.
type qSpy struct {
	spec.Method
	uniform  bool
	withQ    int
	proposed int
}

func (s *qSpy) Propose(ps []spec.Proposal) error {
	if err := s.Method.Propose(ps); err != nil {
		return err
	}
	for i := range ps {
		if len(ps[i].Drafts) == 0 {
			continue
		}
		s.proposed++
		if ps[i].Q != nil {
			s.withQ++
			if s.uniform {
				for j := range ps[i].Q {
					ps[i].Q[j] = 1 / float32(schedtest.DistConfig.Vocab)
				}
			}
		}
	}
	return nil
}

// EAGLE, EAGLE-3 and Medusa heads and draft models sample their drafts at the request's
// temperature and return the distribution they drew them from: the joint distribution of the
// first tokens generated with such drafts is exactly the target's (chi-square and total
// variation of 4000 generations against the exact joint, as the sampler's own tests), every
// draft came with its q, and a wrong q (uniform) in its place is caught. (Verifying a sampled draft as one-hot, q ignored, is exact too: any draft drawn
// independently of the verifier is; q only raises the acceptance, min(1, p/q) >= p.)
func TestHeadsSampledDistribution(t *testing.T) {
	const N = 4000
	w := schedtest.DistWeights()
	headCfg := weights.Config{Arch: "llama", Dim: 16, HiddenDim: 32, NHeads: 2, NKVHeads: 2, HeadDim: 8, MaxSeq: 32,
		RopeTheta: 10000, RMSEps: 1e-5, BOS: -1}
	// (EAGLE-1 drafts through the same code as EAGLE-3: model.Eagle.Draft.)
	for _, kind := range []string{weights.EagleKind3, "medusa", "draft_model"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			var err error
			switch kind {
			case "medusa":
				err = weights.WriteMedusa(dir, ref.RandomMedusa(3, 1, headCfg.Dim, 0, 11), weights.MedusaV2, weights.F32)
			case "draft_model": // another random model of the target's shape
				dir = writeLlamaDir(t, ref.RandomLlama(schedtest.DistConfig, 11))
			default:
				err = weights.WriteEagle(dir, ref.RandomEagle(kind, headCfg, schedtest.DistConfig, 0, 11), weights.EagleWriteOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			ck, err := spec.Open(spec.Config{Mode: kind, NumSpeculativeTokens: 2, Model: dir}, &w.Cfg)
			if err != nil {
				t.Fatal(err)
			}
			o := model.Options{PageSize: 8, PrefillChunk: 32}
			ModelOptions(&o, ck.Needs())
			m, err := model.New(loopDevice(t), w, o)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Release()
			meth, err := Load(ck, m)
			if err != nil {
				t.Fatal(err)
			}
			defer meth.Release()
			for _, s := range schedtest.DistSettings[1:] { // top-p 0.9: the processed p differs from the logits' softmax
				exact := schedtest.ExactJoint(w, kernelref.SamplingParams{Temperature: s.Temperature, TopP: s.TopP})
				spy := &qSpy{Method: meth}
				counts, err := schedtest.SampleJoint(m, spy, N, 7<<32, s, 2)
				if err != nil {
					t.Fatal(err)
				}
				r := schedtest.Compare(counts, exact)
				t.Logf("%+v: %v; %d of %d proposals with q", s, r, spy.withQ, spy.proposed)
				if !r.OK() {
					t.Errorf("%+v: sampled drafts: not the target's distribution: %v", s, r)
				}
				if spy.proposed == 0 || spy.withQ != spy.proposed {
					t.Errorf("%+v: %d of %d proposals came with q", s, spy.withQ, spy.proposed)
				}
				wrong := &qSpy{Method: meth, uniform: true}
				counts, err = schedtest.SampleJoint(m, wrong, N, 7<<32, s, 2)
				if err != nil {
					t.Fatal(err)
				}
				if r := schedtest.Compare(counts, exact); r.OK() {
					t.Errorf("%+v: a uniform q in place of the drafts' own passed the check: %v", s, r)
				}
			}
		})
	}
}
