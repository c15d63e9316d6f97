package sched_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	. "github.com/wspec/wspec/spec/sched"
	"github.com/wspec/wspec/spec/sched/schedtest"
	"github.com/wspec/wspec/weights"
)

// The loop's exactness on the reference model (spec/neural's sampler_test runs the same on the device).

// loopCfg is a small random model whose greedy text soon falls into loops, where ngram hits.
var loopCfg = weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
	Vocab: 200, MaxSeq: 128, RopeTheta: 10000, RMSEps: 1e-5}

// loopPrompt repeats itself, so prompt lookup has something to find from the first step.
var loopPrompt = []int{1, 17, 42, 99, 5, 63, 7, 1, 17, 42, 99, 5, 63, 7, 1, 17, 42}

// generate runs one request alone on the reference model of w, drafting k tokens a step with
// method (FixedK), and checks the result and that every page came back.
func generate(t *testing.T, w *weights.LlamaWeights, method spec.Method, prompt []int, k, maxNew int, s batch.Sampling, stop []int) Result {
	t.Helper()
	m := ref.NewModel(w, 64, 8, refLimits)
	var emitted []int
	res := Generate(m, method, Options{}, &Request{Ctx: context.Background(), Prompt: prompt, MaxNew: maxNew, Sampling: s,
		Stop: stop, K: k, FixedK: true, Emit: func(tok int) bool { emitted = append(emitted, tok); return true }})
	if res.Err != nil {
		t.Fatalf("k %d: %v", k, res.Err)
	}
	if !slices.Equal(res.Tokens, emitted) {
		t.Errorf("emitted %v, returned %v", emitted, res.Tokens)
	}
	if met := res.Metrics; met.AcceptedTokens+met.Steps != met.EmittedTokens || met.AcceptedTokens > met.DraftTokens {
		t.Errorf("inconsistent metrics %+v", met)
	}
	if n := m.Pool().InUse(); n != 0 {
		t.Errorf("%d pages in use after the request", n)
	}
	return res
}

var ngram = &spec.Ngram{Min: 1, Max: 3}

// refLimits are the reference model's step limits (the device model's defaults).
var refLimits = batch.Limits{MaxSeqs: 16, MaxLogitRows: 64, MaxDraft: 8, StepRows: 128}

// Greedy decoding with speculation gives the tokens of greedy decoding without it, for every
// k, and both give ref.Generate's text. Two models: one whose text falls into a loop at once
// (tied embeddings: most drafts pass), one with mixed text.
func TestGreedySpeculationExact(t *testing.T) {
	tied := loopCfg
	tied.TieEmbed = true
	for _, w := range []*weights.LlamaWeights{ref.RandomLlama(tied, 11), ref.RandomLlama(loopCfg, 2)} {
		const n = 60
		want := ref.Generate(w, loopPrompt, n, kernelref.SamplingParams{}, 0, nil)
		plain := generate(t, w, nil, loopPrompt, 0, n, batch.Sampling{}, nil)
		if !slices.Equal(plain.Tokens, want) || plain.Metrics.Steps != n-1 || plain.Metrics.DraftTokens != 0 {
			t.Fatalf("plain greedy %v (%+v), ref.Generate %v", plain.Tokens, plain.Metrics, want)
		}
		accepted, rejected := 0, 0
		for k := 1; k <= spec.MaxSpeculativeTokens; k++ {
			res := generate(t, w, ngram, loopPrompt, k, n, batch.Sampling{}, nil)
			if !slices.Equal(res.Tokens, want) {
				t.Fatalf("k=%d: speculative greedy\n%v\nplain\n%v", k, res.Tokens, want)
			}
			accepted += res.Metrics.AcceptedTokens
			rejected += res.Metrics.DraftTokens - res.Metrics.AcceptedTokens
		}
		if accepted == 0 || rejected == 0 {
			t.Errorf("ngram had %d drafts accepted, %d rejected: want both", accepted, rejected)
		}
	}
}

// The loop stops at MaxNew (exactly), before a stop token (not returned) and when the
// context is full (prompt + output == MaxSeq), with and without speculation.
func TestStops(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 2)
	long := slices.Repeat(loopPrompt, 6)[:100]
	full := ref.Generate(w, long, loopCfg.MaxSeq-len(long), kernelref.SamplingParams{}, 0, nil)
	free := ref.Generate(w, loopPrompt, 50, kernelref.SamplingParams{}, 0, nil)
	stopAt := slices.Index(free, free[30]) // the first occurrence of free[30]
	for _, k := range []int{0, 3, 8} {
		var d spec.Method
		if k > 0 {
			d = ngram
		}
		if got := generate(t, w, d, long, k, 1000, batch.Sampling{}, nil); !slices.Equal(got.Tokens, full) || got.Finish != spec.FinishContextFull {
			t.Errorf("k=%d context full: got %d tokens %v (%s), want %d %v", k, len(got.Tokens), got.Tokens, got.Finish, len(full), full)
		}
		for _, n := range []int{1, 2, 7, 33} {
			if got := generate(t, w, d, loopPrompt, k, n, batch.Sampling{}, nil); !slices.Equal(got.Tokens, free[:n]) || got.Finish != spec.FinishLength {
				t.Errorf("k=%d max new %d: got %v (%s)", k, n, got.Tokens, got.Finish)
			}
		}
		if got := generate(t, w, d, loopPrompt, k, 50, batch.Sampling{}, []int{free[30], 9999}); !slices.Equal(got.Tokens, free[:stopAt]) || got.Finish != spec.FinishStop {
			t.Errorf("k=%d stop token %d: got %v (%s), want %v", k, free[30], got.Tokens, got.Finish, free[:stopAt])
		}
	}
	if got := generate(t, w, nil, slices.Repeat(loopPrompt, 8)[:loopCfg.MaxSeq-1], 0, 5, batch.Sampling{}, nil); len(got.Tokens) != 1 || got.Finish != spec.FinishContextFull {
		t.Errorf("prompt of MaxSeq-1 tokens: %+v (want one token)", got)
	}
	m := ref.NewModel(w, 64, 8, refLimits)
	if res := Generate(m, nil, Options{}, &Request{Ctx: context.Background(), Prompt: slices.Repeat(loopPrompt, 8)[:loopCfg.MaxSeq], MaxNew: 5}); res.Err == nil {
		t.Error("a prompt filling the context was accepted")
	}
}

// The same seed and settings give the same tokens, with or without drafts; another seed or
// another choice other tokens.
func TestSeededReproducible(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 5)
	s := batch.Sampling{Temperature: 1, TopP: 0.95, Seed: 123456789}
	a := generate(t, w, ngram, loopPrompt, 4, 40, s, nil).Tokens
	if b := generate(t, w, nil, loopPrompt, 0, 40, s, nil).Tokens; !slices.Equal(a, b) {
		t.Fatalf("same seed, with and without drafts:\n%v\n%v", a, b)
	}
	if want := ref.Generate(w, loopPrompt, 40, kernelref.SamplingParams{Temperature: 1, TopP: 0.95}, s.Seed, nil); !slices.Equal(a, want) {
		t.Fatalf("seeded sampling %v differs from ref.Generate %v", a, want)
	}
	s.Seed++
	if c := generate(t, w, ngram, loopPrompt, 4, 40, s, nil).Tokens; slices.Equal(a, c) {
		t.Fatalf("seeds %d and %d gave the same 40 tokens %v", s.Seed-1, s.Seed, a)
	}
	s.Seed--
	s.Choice = 1
	if d := generate(t, w, ngram, loopPrompt, 4, 40, s, nil).Tokens; slices.Equal(a, d) {
		t.Fatalf("choices 0 and 1 gave the same 40 tokens %v", a)
	}
}

// 10^4 speculative samples (k = 3, drafts sampled from a peaked q with the target's keys,
// verified one-hot) match the exact distribution and plain sampling; the broken samplers fail.
func TestSpeculativeDistribution(t *testing.T) {
	const N = 10000
	w := schedtest.DistWeights()
	target := func(broken string) *ref.Model {
		m := ref.NewModel(w, 200, 8, refLimits)
		if broken != "" {
			m.Verify = schedtest.Broken[broken]
		}
		return m
	}
	drafter := schedtest.NewStochastic(schedtest.DistConfig.Vocab, 9, 3)
	for _, s := range schedtest.DistSettings {
		exact := schedtest.ExactJoint(w, kernelref.SamplingParams{Temperature: s.Temperature, TopP: s.TopP})
		plain, err := schedtest.SampleJoint(target(""), nil, N, 1<<32, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := schedtest.SampleJoint(target(""), drafter, N, 2<<32, s, 3)
		if err != nil {
			t.Fatal(err)
		}
		for name, counts := range map[string][]float64{"plain": plain, "speculative": spec} {
			r := schedtest.Compare(counts, exact)
			t.Logf("%+v %s: %v", s, name, r)
			if !r.OK() {
				t.Errorf("%+v: %s sampling is not the target's distribution: %v", s, name, r)
			}
		}
		chi2, chi2Max, tv, tvMax := schedtest.TwoSample(plain, spec, exact)
		if chi2 > chi2Max || tv > tvMax {
			t.Errorf("%+v: plain and speculative samples differ: chi2 %.1f (max %.1f), TV %.4f (max %.4f)", s, chi2, chi2Max, tv, tvMax)
		}
		for broken := range schedtest.Broken {
			counts, err := schedtest.SampleJoint(target(broken), drafter, N, 3<<32, s, 3)
			if err != nil {
				t.Fatal(err)
			}
			if r := schedtest.Compare(counts, exact); r.OK() {
				t.Errorf("%+v: the %s sampler passed the check: %v", s, broken, r)
			}
		}
	}
}

// Structured outputs stay exact under speculation: 10^4 constrained samples with drafts
// (sampled with q over every token with text, so that they often leave the grammar; verified
// with q, and as one-hot drafts) match the constrained target's exact distribution; masking every
// verified row with the mask of the position before the drafts fails (its text leaves the
// grammar, or its distribution is off).
func TestConstrainedDistribution(t *testing.T) {
	const N = 10000
	w := schedtest.DistWeights()
	g := schedtest.DistGrammar()
	target := func() *ref.Model { return ref.NewModel(w, 200, 8, refLimits) }
	q := make([]float32, schedtest.DistConfig.Vocab)
	for i := range q[:len(q)-1] {
		q[i] = 1 / float32(len(q)-1)
	}
	methods := map[string]spec.Method{"plain": nil, "stochastic": &schedtest.Stochastic{Q: q},
		"one-hot": oneHot{&schedtest.Stochastic{Q: q}}}
	for _, s := range schedtest.DistSettings {
		exact := schedtest.ExactJointGrammar(w, kernelref.SamplingParams{Temperature: s.Temperature, TopP: s.TopP}, g)
		for name, m := range methods {
			k := 3
			if m == nil {
				k = 0
			}
			counts, err := schedtest.SampleJointGrammar(target(), m, N, 7<<32, s, k, g)
			if err != nil {
				t.Fatal(err)
			}
			r := schedtest.Compare(counts, exact)
			t.Logf("%+v %s: %v", s, name, r)
			if !r.OK() {
				t.Errorf("%+v: constrained %s sampling is not the constrained target's distribution: %v", s, name, r)
			}
		}
		SetMaskBeforeDrafts(true)
		counts, err := schedtest.SampleJointGrammar(target(), methods["stochastic"], N, 8<<32, s, 3, g)
		SetMaskBeforeDrafts(false)
		if err != nil {
			if !strings.Contains(err.Error(), "does not continue the output") {
				t.Errorf("%+v: the broken masks failed otherwise than by leaving the grammar: %v", s, err)
			}
			t.Logf("%+v: the broken masks: %v", s, err)
			continue
		}
		if r := schedtest.Compare(counts, exact); r.OK() {
			t.Errorf("%+v: masking every row with the first row's mask passed the check: %v", s, r)
		}
	}
}

// oneHot proposes the drafts of its Stochastic without their q: one-hot drafts, as the
// lookup and argmax drafters give.
type oneHot struct{ *schedtest.Stochastic }

func (o oneHot) Propose(ps []spec.Proposal) error {
	err := o.Stochastic.Propose(ps)
	for i := range ps {
		ps[i].Q = nil
	}
	return err
}
