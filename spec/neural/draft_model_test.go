package neural

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// smallCfg is a smaller draft model for loopCfg's targets: same vocabulary, half the width, one
// layer.
var smallCfg = weights.Config{Arch: "llama", Dim: 32, HiddenDim: 48, NLayers: 1, NHeads: 2, NKVHeads: 1, HeadDim: 16,
	Vocab: 200, MaxSeq: 128, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true}

// writeLlamaDir writes w as a Hugging Face Llama folder (config.json + F32 model.safetensors).
func writeLlamaDir(t testing.TB, w *weights.LlamaWeights) string {
	t.Helper()
	dir, c := t.TempDir(), w.Cfg
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	ts := []weights.Tensor{weights.F32Tensor(weights.EmbedTensorName, []int{c.Vocab, c.Dim}, w.Embed),
		weights.F32Tensor(weights.NormTensorName, []int{c.Dim}, w.Norm)}
	if !c.TieEmbed {
		ts = append(ts, weights.F32Tensor(weights.LMHeadTensorName, []int{c.Vocab, c.Dim}, w.LMHead))
	}
	for i, l := range w.Layers {
		add := func(s string, v []float32, shape ...int) {
			ts = append(ts, weights.F32Tensor(weights.LayerTensorName(i, s), shape, v))
		}
		add(weights.AttnNormSuffix, l.AttnNorm, c.Dim)
		add(weights.FFNNormSuffix, l.FFNNorm, c.Dim)
		add(weights.WqSuffix, l.Wq, q, c.Dim)
		add(weights.WkSuffix, l.Wk, kv, c.Dim)
		add(weights.WvSuffix, l.Wv, kv, c.Dim)
		add(weights.WoSuffix, l.Wo, c.Dim, q)
		add(weights.GateSuffix, l.WGate, c.HiddenDim, c.Dim)
		add(weights.UpSuffix, l.WUp, c.HiddenDim, c.Dim)
		add(weights.DownSuffix, l.WDown, c.Dim, c.HiddenDim)
	}
	if err := weights.WriteSafeTensors(filepath.Join(dir, weights.SingleFileName), ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := weights.WriteConfig(dir, &c); err != nil {
		t.Fatal(err)
	}
	return dir
}

// draftModel makes the draft_model drafter through the registry, from a checkpoint folder.
func draftModel(t testing.TB, dir string, target *model.Model) spec.Method {
	t.Helper()
	d, err := openDrafter(t, spec.Config{Mode: "draft_model", NumSpeculativeTokens: 1, Model: dir}, target)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Greedy decoding with a draft model gives plain greedy's tokens for every k: with a smaller
// random model (loaded from a checkpoint folder through the registry) and with the target
// itself as its own draft model, whose drafts nearly all pass. See also
// TestDraftModelKVType.
func TestDraftModelGreedyExact(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 2)
	m := newDeviceModel(t, w)
	const n = 40
	want := ref.Generate(w, loopPrompt, n, kernelref.SamplingParams{}, 0, nil)
	drafters := map[string]spec.Method{
		"small": draftModel(t, writeLlamaDir(t, ref.RandomLlama(smallCfg, 9)), m),
		"self":  draftModel(t, writeLlamaDir(t, w), m),
	}
	for _, name := range []string{"small", "self"} {
		var total spec.Metrics
		for k := 1; k <= spec.MaxSpeculativeTokens; k++ {
			got, met := decode(t, w, m, drafters[name], loopPrompt, k, n, batch.Sampling{}, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("%s k=%d: speculative greedy\n%v\nplain\n%v", name, k, got, want)
			}
			t.Logf("%s k=%d: %d steps, acceptance %.2f, mean acceptance length %.2f", name, k, met.Steps,
				met.AcceptanceRate(), met.MeanAcceptanceLength())
			total.DraftTokens += met.DraftTokens
			total.AcceptedTokens += met.AcceptedTokens
		}
		t.Logf("%s: acceptance over k=1..8: %.3f", name, total.AcceptanceRate())
		if name == "self" && total.AcceptanceRate() < 0.9 {
			t.Errorf("the target as its own draft model: acceptance %.3f, want > 0.9", total.AcceptanceRate())
		}
	}
}

// A draft model keeps its KV cache in the target's KV type (an f16 cache for an f16 target
// halves the draft model's KV reads), and greedy decoding stays exact with it.
func TestDraftModelKVType(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 2)
	m := newDeviceModelKV(t, w, wgsl.F16)
	d := draftModel(t, writeLlamaDir(t, w), m)
	if got := d.(*DraftModelMethod).m.Opts.KVType; got != wgsl.F16 {
		t.Fatalf("the draft model's KV cache is %v for a target's of f16", got)
	}
	const n = 40
	want, _ := decode(t, w, m, nil, loopPrompt, 0, n, batch.Sampling{}, nil)
	got, met := decode(t, w, m, d, loopPrompt, 4, n, batch.Sampling{}, nil)
	if !slices.Equal(got, want) {
		t.Fatalf("speculative greedy with an f16 draft KV\n%v\nplain\n%v", got, want)
	}
	if met.AcceptanceRate() < 0.9 {
		t.Errorf("the target as its own draft model (both f16 KV): acceptance %.3f, want > 0.9", met.AcceptanceRate())
	}
}

// Sampled decoding with a draft model: the device target gives the fake target's tokens (the
// same drafts, the same sampler keys), the same seed gives the same tokens, and another seed
// other tokens.
func TestDraftModelSampled(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 5)
	m := newDeviceModel(t, w)
	dm := draftModel(t, writeLlamaDir(t, ref.RandomLlama(smallCfg, 3)), m)
	self := draftModel(t, writeLlamaDir(t, w), m)
	for _, s := range []batch.Sampling{{Temperature: 1, TopP: 0.95, Seed: 42}, {Temperature: 0.7, TopK: 20, Seed: 7, Choice: 1}} {
		for name, d := range map[string]spec.Method{"small": dm, "self": self} {
			a, met := decode(t, w, m, d, loopPrompt, 4, 30, s, nil)
			b, _ := decode(t, w, m, d, loopPrompt, 4, 30, s, nil)
			fake, _ := decode(t, w, nil, d, loopPrompt, 4, 30, s, nil)
			if !slices.Equal(a, b) || !slices.Equal(a, fake) {
				t.Fatalf("%s %+v: runs differ\ndevice %v\nagain  %v\nfake   %v", name, s, a, b, fake)
			}
			t.Logf("%s %+v: acceptance %.2f", name, s, met.AcceptanceRate())
			s.Seed++
			if c, _ := decode(t, w, m, d, loopPrompt, 4, 30, s, nil); slices.Equal(a, c) {
				t.Fatalf("%s: seeds %d and %d gave the same tokens %v", name, s.Seed-1, s.Seed, a)
			}
			s.Seed--
		}
	}
}

// A draft model with another vocabulary size, or no folder, is refused with a clear error.
func TestDraftModelErrors(t *testing.T) {
	m := newDeviceModel(t, ref.RandomLlama(loopCfg, 2))
	other := smallCfg
	other.Vocab = 150
	_, err := openDrafter(t, spec.Config{Mode: "draft_model", NumSpeculativeTokens: 1, Model: writeLlamaDir(t, ref.RandomLlama(other, 1))}, m)
	if !errors.Is(err, ErrVocabMismatch) || !strings.Contains(err.Error(), "150") || !strings.Contains(err.Error(), "200") {
		t.Errorf("another vocabulary: %v", err)
	}
	if _, err := NewDraftModelMethod(newDeviceModel(t, ref.RandomLlama(other, 1)), loopCfg.Vocab); !errors.Is(err, ErrVocabMismatch) {
		t.Errorf("another vocabulary (model): %v", err)
	}
	if _, err := openDrafter(t, spec.Config{Mode: "draft_model", NumSpeculativeTokens: 1, Model: t.TempDir()}, m); err == nil {
		t.Error("an empty folder was accepted as a draft model")
	}
}
