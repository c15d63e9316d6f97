package neural

import (
	"context"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/spec/sched"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched/schedtest"
	"github.com/wspec/wspec/weights"
)

// qSpy passes a method's proposals through, counting those that came with q.
type qSpy struct {
	spec.Method
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
		}
	}
	return nil
}

// EAGLE, EAGLE-3 and Medusa heads and draft models sample their drafts at the request's
// temperature: the joint distribution of the first tokens generated with such drafts is
// exactly the target's (chi-square and total variation of 4000 generations against the exact
// joint, as the sampler's own tests), and it is the very sample plain decoding draws with the
// same seeds (the output is the target's draws, whatever was drafted). A draft model that is
// the target itself draws the target's draws (coupled keys): at temperature 1 without top-p
// nearly every draft passes.
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
			m, meth := targetWith(t, w, ck)
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
				plain, err := schedtest.SampleJoint(m, nil, N, 7<<32, s, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(plain, counts) {
					t.Errorf("%+v: the samples with sampled drafts differ from plain sampling's with the same seeds", s)
				}
			}
		})
	}
}

// A draft model that is the target itself, sampling with the target's keys, drafts exactly
// the target's draws at temperature 1 (its q is the target's p): every draft passes but for
// f32 near-ties.
func TestDraftModelCoupledToItself(t *testing.T) {
	w := schedtest.DistWeights()
	ck, err := spec.Open(spec.Config{Mode: "draft_model", NumSpeculativeTokens: 3, Model: writeLlamaDir(t, w)}, &w.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, meth := targetWith(t, w, ck)
	var drafts, accepted int
	for seed := range uint64(8) {
		res := sched.Generate(m, meth, sched.Options{}, &sched.Request{Ctx: context.Background(), Prompt: []int{1, 2, 3}, MaxNew: 12,
			Sampling: batch.Sampling{Temperature: 1, Seed: seed}, K: 3, FixedK: true})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		drafts, accepted = drafts+res.Metrics.DraftTokens, accepted+res.Metrics.AcceptedTokens
	}
	t.Logf("%d of %d drafts accepted", accepted, drafts)
	if drafts == 0 || float64(accepted) < 0.95*float64(drafts) {
		t.Errorf("%d of %d drafts accepted: the draft model's draws are not the target's", accepted, drafts)
	}
}

// targetWith is a target model of w on the device with what drafter checkpoint ck needs, and
// the drafter loaded next to it (both released when the test ends).
func targetWith(t *testing.T, w *weights.LlamaWeights, ck spec.Checkpoint) (*model.Model, spec.Method) {
	t.Helper()
	o := model.Options{PageSize: 8, PrefillChunk: 32}
	ModelOptions(&o, ck.Needs())
	m, err := model.New(loopDevice(t), w, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	meth, err := Load(ck, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(meth.Release)
	return m, meth
}
