package neural

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// eagleTargetCfg has 4 layers: EAGLE-3's default features are the inputs of layers 2, 2, 1.
var eagleTargetCfg = weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 4, NHeads: 4, NKVHeads: 2, HeadDim: 16,
	Vocab: 200, MaxSeq: 128, RopeTheta: 10000, RMSEps: 1e-5}

// eagleTarget is a random target in which only the last layer does anything: the earlier
// layers' Wo and Wdown are zero, the last layer's attention is scaled by attn, the final
// norm's weight is one and every embedding row has the same root mean square, 1/4. With
// attn 0 the next token depends on the newest token alone, and perfectEagle's heads
// predict it (EAGLE-1 exactly, EAGLE-3 at the first depth); with attn > 0 only partly.
func eagleTarget(seed int64, attn float32) *weights.LlamaWeights {
	w := ref.RandomLlama(eagleTargetCfg, seed)
	for l := range w.Layers {
		ly := &w.Layers[l]
		if l < len(w.Layers)-1 {
			clear(ly.Wo)
			clear(ly.WDown)
			continue
		}
		for i := range ly.Wo {
			ly.Wo[i] *= attn
		}
	}
	for i := range w.Norm {
		w.Norm[i] = 1
	}
	H := eagleTargetCfg.Dim
	for r := 0; r < eagleTargetCfg.Vocab; r++ {
		row := w.Embed[r*H : (r+1)*H]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		scale := float32(0.25 / math.Sqrt(ss/float64(H)))
		for i := range row {
			row[i] *= scale
		}
	}
	return w
}

// perfectEagle is a head that reproduces eagleTarget's last layer without its attention, the
// target's MLP, post-attention norm and LM head (EAGLE-3: behind a permutation that d2t
// undoes, after the target's final norm) applied to the embedding of the token:
//
//	EAGLE-1: fc picks the embedding (g = E x) and the attention adds nothing (Wo = 0);
//	EAGLE-3: fc is zero (g = 0 at the first depth; later depths add the previous output),
//	         each row attends to itself (q = 20 k, k = v = rmsnorm(E x)) and Wo undoes the norm.
func perfectEagle(kind string, tw *weights.LlamaWeights, seed int64) *weights.Eagle {
	H, last := tw.Cfg.Dim, tw.Layers[len(tw.Layers)-1]
	e := ref.RandomEagle(kind, weights.Config{Arch: "llama", Dim: H, HiddenDim: tw.Cfg.HiddenDim,
		NHeads: 2, NKVHeads: 2, HeadDim: H / 2, MaxSeq: tw.Cfg.MaxSeq, RopeTheta: 10000, RMSEps: 1e-5, BOS: -1},
		tw.Cfg, 0, seed)
	width := len(e.FC) / H
	clear(e.FC)
	clear(e.Wo)
	e.WGate, e.WUp, e.WDown = slices.Clone(last.WGate), slices.Clone(last.WUp), slices.Clone(last.WDown)
	e.PostNorm = slices.Clone(last.FFNNorm)
	if kind == weights.EagleKind1 {
		for r := range H {
			e.FC[r*width+r] = 1
		}
		clear(e.FCBias)
		return e
	}
	clear(e.Wq)
	clear(e.Wk)
	clear(e.Wv)
	for i := range H { // u = [rmsnorm_in(E x) | ...]: 2H columns
		e.Wq[i*2*H+i], e.Wk[i*2*H+i], e.Wv[i*2*H+i] = 20, 1, 1
		e.InputNorm[i] = 1
		e.Wo[i*H+i] = float32(math.Sqrt(0.0625 + tw.Cfg.RMSEps))
	}
	V := tw.Cfg.Vocab
	perm := rand.New(rand.NewSource(seed)).Perm(V)
	e.LMHead, e.D2T, e.DraftVocab = make([]float32, V*H), make([]int64, V), V
	for i, p := range perm {
		copy(e.LMHead[i*H:(i+1)*H], tw.LMHead[p*H:(p+1)*H])
		e.D2T[i] = int64(p - i)
	}
	e.Norm = slices.Clone(tw.Norm)
	return e
}

func writeEagle(t testing.TB, e *weights.Eagle, o weights.EagleWriteOptions) string {
	t.Helper()
	dir := t.TempDir()
	if err := weights.WriteEagle(dir, e, o); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newEagle(t testing.TB, kind, dir string, m *model.Model) spec.Method {
	t.Helper()
	d, err := openDrafter(t, spec.Config{Mode: kind, NumSpeculativeTokens: 1, Model: dir}, m)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func eagleModel(t testing.TB, w *weights.LlamaWeights, kind string) *model.Model {
	return eagleModelWT(t, w, kind, wgsl.F32)
}

func eagleModelWT(t testing.TB, w *weights.LlamaWeights, kind string, wt wgsl.WeightType) *model.Model {
	t.Helper()
	var aux []int
	if kind == weights.EagleKind3 {
		aux = []int{2, 2, 1}
	}
	m, err := model.New(loopDevice(t), w, model.Options{Weights: wt, PageSize: 8, PrefillChunk: 32, AuxLayers: aux, FeatureSlots: model.SlotPerSequence, DraftQ: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Greedy decoding with an EAGLE or EAGLE-3 drafter gives the tokens of greedy decoding
// without speculation, for k = 1..8: with a head that predicts the target well (most drafts
// pass, so the catch-up runs over up to k+1 rows), one that predicts it partly, and a random
// one (almost every draft fails). The prompt is longer than the prefill chunk, so the head
// starts from the last chunk's features.
func TestEagleGreedyExact(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	prompt := make([]int, 40)
	for i := range prompt {
		prompt[i] = rng.Intn(eagleTargetCfg.Vocab)
	}
	const n = 40
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		for _, attn := range []float32{0, 0.2} {
			tw := eagleTarget(21, attn)
			m := eagleModel(t, tw, kind)
			want, _ := decode(t, tw, m, nil, prompt, 0, n, batch.Sampling{}, nil)
			heads := map[string]*weights.Eagle{"perfect": perfectEagle(kind, tw, 3)}
			if attn > 0 {
				c := eagleTargetCfg
				c.HiddenDim, c.NHeads, c.NKVHeads, c.HeadDim, c.BOS = 80, 4, 2, 16, -1
				if kind == weights.EagleKind3 {
					c.Dim, c.HeadDim = 48, 12 // an own embedding, fc from 3*64 to 48
				}
				heads["random"] = ref.RandomEagle(kind, c, tw.Cfg, 120, 4)
			}
			for name, h := range heads {
				dir := writeEagle(t, h, weights.EagleWriteOptions{Prefix: name == "random"})
				var rates []string
				for k := 1; k <= spec.MaxSpeculativeTokens; k++ {
					if name == "random" && k%3 != 1 {
						continue
					}
					got, met := decode(t, tw, m, newEagle(t, kind, dir, m), prompt, k, n, batch.Sampling{}, nil)
					if !slices.Equal(got, want) {
						t.Fatalf("%s %s head (attn %.1f), k %d:\n got %v\nwant %v", kind, name, attn, k, got, want)
					}
					rates = append(rates, fmt.Sprintf("%.2f", met.AcceptanceRate()))
					if name == "perfect" && attn == 0 && (kind == weights.EagleKind1 || k == 1) && met.AcceptanceRate() < 0.9 {
						t.Errorf("%s perfect head, k %d: acceptance %.2f (%+v)", kind, k, met.AcceptanceRate(), met)
					}
				}
				t.Logf("%s %s head, attn %.1f: acceptance by k %v", kind, name, attn, rates)
			}
		}
	}
}

// Sampling with an EAGLE drafter is reproducible: the same seed gives the same tokens. With
// f16 weights (the head's too) greedy speculation stays exact.
func TestEagleSampledReproducible(t *testing.T) {
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		tw := eagleTarget(5, 0.3)
		m := eagleModel(t, tw, kind)
		dir := writeEagle(t, perfectEagle(kind, tw, 6), weights.EagleWriteOptions{DType: weights.F16})
		prompt := []int{3, 1, 4, 1, 5, 9, 2, 6}
		m16 := eagleModelWT(t, tw, kind, wgsl.F16)
		want, _ := decode(t, tw, m16, nil, prompt, 0, 30, batch.Sampling{}, nil)
		if got, _ := decode(t, tw, m16, newEagle(t, kind, dir, m16), prompt, 5, 30, batch.Sampling{}, nil); !slices.Equal(got, want) {
			t.Errorf("%s, f16 weights: greedy with speculation %v, without %v", kind, got, want)
		}
		s := batch.Sampling{Temperature: 0.8, TopP: 0.95, Seed: 77}
		a, met := decode(t, tw, m, newEagle(t, kind, dir, m), prompt, 4, 40, s, nil)
		b, _ := decode(t, tw, m, newEagle(t, kind, dir, m), prompt, 4, 40, s, nil)
		if !slices.Equal(a, b) || len(a) != 40 {
			t.Fatalf("%s: two runs with seed 77 gave\n%v\n%v", kind, a, b)
		}
		if met.AcceptedTokens == 0 {
			t.Errorf("%s: no draft accepted while sampling (%+v)", kind, met)
		}
	}
}
