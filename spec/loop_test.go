package spec

import (
	"context"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// loopCfg is a small random model whose greedy text soon falls into loops, where ngram hits.
var loopCfg = weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
	Vocab: 200, MaxSeq: 128, RopeTheta: 10000, RMSEps: 1e-5}

// loopPrompt repeats itself, so prompt lookup has something to find from the first step.
var loopPrompt = []int{1, 17, 42, 99, 5, 63, 7, 1, 17, 42, 99, 5, 63, 7, 1, 17, 42}

func newDeviceModel(t testing.TB, w *weights.LlamaWeights) *model.Model {
	t.Helper()
	m, err := model.New(loopDevice(t), w, model.Options{PageSize: 8, PrefillChunk: 32})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// target is a fresh sequence on the device model m or, with m nil, on the fake over w.
type target struct {
	Target
	pool    *runtime.PagePool
	release func()
}

func newTarget(w *weights.LlamaWeights, m *model.Model) target {
	if m == nil {
		return target{Target: newFakeTarget(w), release: func() {}}
	}
	s := m.NewSession()
	return target{Target: s, pool: m.Pool, release: s.Release}
}

// decode runs Decode on a fresh sequence with every step checked, releases the sequence and
// checks that no page leaked.
func decode(t *testing.T, w *weights.LlamaWeights, m *model.Model, d Drafter, prompt []int, k, maxNew int,
	s model.Sampling, stop []int) ([]int, Metrics) {
	t.Helper()
	tg := newTarget(w, m)
	if b, ok := d.(*boundDrafter); ok {
		if err := b.bind(tg.Target); err != nil {
			t.Fatal(err)
		}
		defer b.Release()
	}
	ct := &checkedTarget{Target: tg.Target, t: t, pool: tg.pool}
	var emitted []int
	o, err := Decode(context.Background(), ct, d, prompt, k, maxNew, s, stop, func(tok int) bool { emitted = append(emitted, tok); return true })
	out, met := o.Tokens, o.Metrics
	if err != nil {
		t.Fatalf("Decode (k %d): %v", k, err)
	}
	if !slices.Equal(out, emitted) {
		t.Errorf("emitted %v, returned %v", emitted, out)
	}
	if met.AcceptedTokens+met.Steps != met.EmittedTokens || met.AcceptedTokens > met.DraftTokens {
		t.Errorf("inconsistent metrics %+v", met)
	}
	tg.release()
	if tg.pool != nil && tg.pool.InUse() != 0 {
		t.Errorf("%d pages still in use after Release", tg.pool.InUse())
	}
	return out, met
}

func ngram(t testing.TB) Drafter {
	g, err := NewNgram(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Greedy decoding with speculation gives the tokens of greedy decoding without it, for every k,
// on the device and on the fake; and both give ref.Generate's text. Two models: one whose text
// falls into a loop at once (tied embeddings: most drafts pass), one with mixed text.
func TestGreedySpeculationExact(t *testing.T) {
	tied := loopCfg
	tied.TieEmbed = true
	for _, w := range []*weights.LlamaWeights{ref.RandomLlama(tied, 11), ref.RandomLlama(loopCfg, 2)} {
		m := newDeviceModel(t, w)
		const n = 60
		want := ref.Generate(w, loopPrompt, n, ref.SamplingParams{}, 0, nil)
		for _, dev := range []*model.Model{m, nil} {
			name := map[bool]string{true: "device", false: "fake"}[dev != nil]
			plain, met := decode(t, w, dev, nil, loopPrompt, 4, n, model.Sampling{}, nil)
			if !slices.Equal(plain, want) || met.Steps != n-1 || met.DraftTokens != 0 {
				t.Fatalf("%s: plain greedy %v (%+v), ref.Generate %v", name, plain, met, want)
			}
			accepted, rejected := 0, 0
			for k := 1; k <= MaxSpeculativeTokens; k++ {
				got, met := decode(t, w, dev, ngram(t), loopPrompt, k, n, model.Sampling{}, nil)
				if !slices.Equal(got, want) {
					t.Fatalf("%s k=%d: speculative greedy\n%v\nplain\n%v", name, k, got, want)
				}
				accepted += met.AcceptedTokens
				rejected += met.DraftTokens - met.AcceptedTokens
				t.Logf("%s tied=%v k=%d: %d steps, acceptance %.2f, mean acceptance length %.2f, per position %v",
					name, w.Cfg.TieEmbed, k, met.Steps, met.AcceptanceRate(), met.MeanAcceptanceLength(), met.AcceptedPerPosition)
			}
			if accepted == 0 || rejected == 0 {
				t.Errorf("%s: ngram had %d drafts accepted, %d rejected: want both", name, accepted, rejected)
			}
		}
	}
}

// The loop stops at maxNew (exactly), before a stop token (not returned) and when the context
// is full (prompt + output == MaxSeq), with and without speculation.
func TestDecodeStops(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 2)
	m := newDeviceModel(t, w)
	long := slices.Repeat(loopPrompt, 6)[:100]
	full := ref.Generate(w, long, loopCfg.MaxSeq-len(long), ref.SamplingParams{}, 0, nil)
	free := ref.Generate(w, loopPrompt, 50, ref.SamplingParams{}, 0, nil)
	stopAt := slices.Index(free, free[30]) // the first occurrence of free[30]
	for _, dev := range []*model.Model{m, nil} {
		for _, k := range []int{0, 3, 8} {
			var d Drafter
			if k > 0 {
				d = ngram(t)
			}
			if got, _ := decode(t, w, dev, d, long, k, 1000, model.Sampling{}, nil); !slices.Equal(got, full) {
				t.Errorf("k=%d context full: got %d tokens %v, want %d %v", k, len(got), got, len(full), full)
			}
			for _, n := range []int{1, 2, 7, 33} {
				if got, _ := decode(t, w, dev, d, loopPrompt, k, n, model.Sampling{}, nil); !slices.Equal(got, free[:n]) {
					t.Errorf("k=%d maxNew %d: got %v", k, n, got)
				}
			}
			if got, _ := decode(t, w, dev, d, loopPrompt, k, 50, model.Sampling{}, []int{free[30], 9999}); !slices.Equal(got, free[:stopAt]) {
				t.Errorf("k=%d stop token %d: got %v, want %v", k, free[30], got, free[:stopAt])
			}
		}
	}
	if got, err := Decode(context.Background(), newFakeTarget(w), nil, slices.Repeat(loopPrompt, 8)[:loopCfg.MaxSeq-1], 0, 5, model.Sampling{}, nil, nil); err != nil || len(got.Tokens) != 1 || got.Finish != FinishContextFull {
		t.Errorf("prompt of MaxSeq-1 tokens: %v, %v (want one token)", got, err)
	}
	if _, err := Decode(context.Background(), newFakeTarget(w), nil, slices.Repeat(loopPrompt, 8)[:loopCfg.MaxSeq], 0, 5, model.Sampling{}, nil, nil); err == nil {
		t.Error("a prompt filling the context was accepted")
	}
}

// Sampled speculative decoding on the device gives exactly the fake's tokens (same maths, same
// random keys), with a one-hot drafter (ngram) and with draft probabilities (has_q).
func TestSampledDeviceMatchesFake(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 2)
	m := newDeviceModel(t, w)
	settings := []model.Sampling{{Temperature: 1, TopP: 0.9}, {Temperature: 0.7, TopK: 20}, {Temperature: 1.3}}
	for si, s := range settings {
		for seed := uint64(1); seed <= 6; seed++ {
			s.Seed, s.SeqID = seed*1000+uint64(si), uint32(seed%3)
			drafters := map[string]func() Drafter{
				"plain":      func() Drafter { return nil },
				"ngram":      func() Drafter { return ngram(t) },
				"stochastic": func() Drafter { return newStochasticDrafter(loopCfg.Vocab, 3, 1, seed) },
			}
			for name, mk := range drafters {
				dev, _ := decode(t, w, m, mk(), loopPrompt, 4, 24, s, nil)
				fake, _ := decode(t, w, nil, mk(), loopPrompt, 4, 24, s, nil)
				if !slices.Equal(dev, fake) {
					t.Errorf("%+v %s: device %v, fake %v", s, name, dev, fake)
				}
			}
		}
	}
	// Plain sampling keys the token at position p with (seed, seq, p), as ref.Generate does.
	p := ref.SamplingParams{Temperature: 1, TopP: 0.9}
	if got, _ := decode(t, w, m, nil, loopPrompt, 0, 20, model.Sampling{Temperature: 1, TopP: 0.9, Seed: 77}, nil); !slices.Equal(got, ref.Generate(w, loopPrompt, 20, p, 77, nil)) {
		t.Errorf("plain sampling %v differs from ref.Generate", got)
	}
}

// The same seed and settings give the same tokens; another seed other tokens.
func TestSeededReproducible(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 5)
	m := newDeviceModel(t, w)
	s := model.Sampling{Temperature: 1, TopP: 0.95, Seed: 123456789}
	a, _ := decode(t, w, m, ngram(t), loopPrompt, 4, 40, s, nil)
	b, _ := decode(t, w, m, ngram(t), loopPrompt, 4, 40, s, nil)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed:\n%v\n%v", a, b)
	}
	s.Seed++
	c, _ := decode(t, w, m, ngram(t), loopPrompt, 4, 40, s, nil)
	if slices.Equal(a, c) {
		t.Fatalf("seeds %d and %d gave the same 40 tokens %v", s.Seed-1, s.Seed, a)
	}
	s.Seed--
	s.SeqID = 1
	if d, _ := decode(t, w, m, ngram(t), loopPrompt, 4, 40, s, nil); slices.Equal(a, d) {
		t.Fatalf("sequence ids 0 and 1 gave the same 40 tokens %v", a)
	}
}
