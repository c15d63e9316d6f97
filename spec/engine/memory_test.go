package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/synth"
	"github.com/wspec/wspec/wgsl"
)

// The memory plan, from config.json and the adapter alone: a Llama-3.2-1B-shaped model gets
// the largest context one layer's K cache (one storage binding) holds, with a note saying so;
// f16 caches hold twice the tokens; an explicit KV budget or context is honoured or refused
// with the numbers; values out of range are refused by name.
func TestMemoryPlan(t *testing.T) {
	d := testDevice(t)
	cfg := synth.Shapes["llama-3.2-1b"]
	p, kv, err := planMemory(&cfg, nil, wgsl.F16, d, Options{}, 16, 8, spec.Needs{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", p)
	perLayer := int64(cfg.NKVHeads * cfg.HeadDim * 2)
	limit := int64(min(d.Limits.MaxStorageBufferBindingSize, d.Limits.MaxBufferSize))
	if kv != wgsl.F16 || p.KVBytesPerToken != 2*int64(cfg.NLayers)*perLayer || int64(p.Pages*16)*perLayer > limit {
		t.Fatalf("plan %+v (kv %v): a layer's K cache over the binding limit %d", p, kv, limit)
	}
	if p.MaxModelLen > cfg.MaxSeq || p.MaxModelLen+8+1 > p.Pages*16 || (p.MaxModelLen < cfg.MaxSeq) != (p.Note != "") {
		t.Fatalf("max_model_len %d with %d pages (note %q)", p.MaxModelLen, p.Pages, p.Note)
	}
	// An EAGLE-3 head with a key/value head per query head, its cache in float32: four times
	// the target's K row in f16 here. Its cache mirrors the pages and must fit a binding too.
	head := spec.Needs{Features: true, KVWidth: cfg.NHeads * cfg.HeadDim, KVF32: true}
	withHead, _, err := planMemory(&cfg, nil, wgsl.F16, d, Options{}, 16, 8, head)
	headRow := int64(4 * head.KVWidth)
	if err != nil || int64(withHead.Pages*16+16*16*3)*headRow > limit || withHead.Pages >= p.Pages ||
		!strings.Contains(withHead.Note, "the drafter's K cache") {
		t.Fatalf("with an EAGLE-3 head: %d pages (%d without), note %q, %v: its cache over the binding limit %d", withHead.Pages, p.Pages, withHead.Note, err, limit)
	}
	f32, _, err := planMemory(&cfg, nil, wgsl.F32, d, Options{}, 16, 8, spec.Needs{})
	if err != nil {
		t.Fatal(err)
	}
	if f32.KVBytesPerToken != 2*p.KVBytesPerToken {
		t.Errorf("f32 KV %d bytes a token, f16 %d", f32.KVBytesPerToken, p.KVBytesPerToken)
	}
	small, _, err := planMemory(&cfg, nil, wgsl.F16, d, Options{KVCacheMemory: 64 << 20}, 16, 8, spec.Needs{})
	if err != nil || small.KVBytes > 64<<20 || small.MaxModelLen >= p.MaxModelLen || !strings.Contains(small.Note, "KV budget") {
		t.Errorf("a 64 MiB KV budget: %+v, %v", small, err)
	}
	if _, _, err := planMemory(&cfg, nil, wgsl.F16, d, Options{KVCacheMemory: 64 << 20, MaxModelLen: 100000}, 16, 8, spec.Needs{}); !errors.Is(err, ErrNoMemory) ||
		!strings.Contains(err.Error(), "max_model_len 100000") {
		t.Errorf("a context that does not fit, asked for: %v", err)
	}
	if _, _, err := planMemory(&cfg, nil, wgsl.F16, d, Options{KVCacheMemory: 1 << 10}, 16, 8, spec.Needs{}); !errors.Is(err, ErrNoMemory) {
		t.Errorf("1 KiB of KV cache: %v", err)
	}
	for name, o := range map[string]Options{
		"max_model_len":          {MaxModelLen: cfg.MaxSeq + 1},
		"kv_cache_memory":        {KVCacheMemory: -1},
		"gpu_memory_utilization": {GPUMemoryUtilization: 1.5},
		"kv_cache_dtype":         {KVCacheDType: "f8"},
	} {
		var ie *InvalidError
		if _, _, err := planMemory(&cfg, nil, wgsl.F16, d, o, 16, 8, spec.Needs{}); !errors.As(err, &ie) || ie.Param != name {
			t.Errorf("%s out of range: %v", name, err)
		}
	}
	// An 8B model on a device of less memory than its weights is refused, with the numbers.
	big := synth.Shapes["llama-3.1-8b"]
	if p, _, err := planMemory(&big, nil, wgsl.F32, d, Options{GPUMemoryUtilization: 0.01}, 16, 8, spec.Needs{}); !errors.Is(err, ErrNoMemory) ||
		!strings.Contains(err.Error(), "weights take") {
		t.Errorf("an 8B model in 1%% of the device: %+v, %v", p, err)
	}
}

// With an f16 KV cache, stories15M's greedy text is the f32 cache's, and speculation stays
// exact (drafts verified against the same cache).
func TestF16KVCache(t *testing.T) {
	if !testDevice(t).HasF16 {
		t.Fatal("the test adapter has no shader-f16")
	}
	load := func(kv string, sc *spec.Config) *Engine {
		e, err := Load(storiesDir, Options{Device: testDevice(t), KVCacheDType: kv, Speculative: sc})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	f32, f16 := load("f32", nil), load("f16", &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4})
	if f16.Info().Memory.KVDType != "f16" || f32.Info().Memory.KVDType != "f32" {
		t.Fatalf("KV types %s and %s", f32.Info().Memory.KVDType, f16.Info().Memory.KVDType)
	}
	for _, prompt := range []string{"Once upon a time", "Tom and Lily went to the park. They", "The little dog was sad because"} {
		want := generate(t, f32, prompt, GenerateOptions{MaxTokens: 48})
		plain := generate(t, f16, prompt, GenerateOptions{MaxTokens: 48, NoSpeculation: true})
		specd := generate(t, f16, prompt, GenerateOptions{MaxTokens: 48})
		if plain.Text != want.Text || specd.Text != want.Text {
			t.Errorf("%q: f32 cache %q\nf16 cache %q\nf16 cache with speculation %q", prompt, want.Text, plain.Text, specd.Text)
		}
	}
}

// dtype auto keeps a 16-bit checkpoint in f16 on the device (and its KV cache with it) and a
// float32 checkpoint in f32.
func TestDTypeAuto(t *testing.T) {
	if !testDevice(t).HasF16 {
		t.Fatal("the test adapter has no shader-f16")
	}
	cfg := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
		Vocab: 300, MaxSeq: 256, RopeTheta: 10000, RMSEps: 1e-5, BOS: 298, EOS: []int{299}}
	for _, c := range []struct {
		stored    weights.DType
		dtype, kv string
	}{{weights.BF16, "f16", "f16"}, {weights.F16, "f16", "f16"}, {weights.F32, "f32", "f32"}} {
		dir := filepath.Join(t.TempDir(), "m")
		if err := synth.Write(dir, cfg, synth.Options{DType: c.stored, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		e, err := Load(dir, Options{Device: testDevice(t)})
		if err != nil {
			t.Fatal(err)
		}
		info := e.Info()
		e.Close()
		if info.DType != c.dtype || info.Memory.KVDType != c.kv {
			t.Errorf("a %s checkpoint: weights %s, KV %s; want %s and %s", c.stored, info.DType, info.Memory.KVDType, c.dtype, c.kv)
		}
	}
}
