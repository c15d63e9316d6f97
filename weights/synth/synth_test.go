package synth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/tokenizer"
)

// tiny is a small Llama shape with a vocabulary past the 256 bytes, so BOS/EOS are specials.
func tiny() weights.Config {
	return weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 3, NHeads: 4, NKVHeads: 2, HeadDim: 16,
		Vocab: 300, MaxSeq: 512, RopeTheta: 10000, RMSEps: 1e-5, BOS: 298, EOS: []int{299}}
}

func TestWriteShardedRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	cfg := tiny()
	if err := Write(dir, cfg, Options{DType: weights.BF16, Seed: 7, ShardBytes: 20000}); err != nil {
		t.Fatal(err)
	}
	got, err := weights.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dim != cfg.Dim || got.NLayers != cfg.NLayers || got.NKVHeads != cfg.NKVHeads || got.Vocab != cfg.Vocab ||
		got.BOS != cfg.BOS || len(got.EOS) != 1 || got.EOS[0] != cfg.EOS[0] {
		t.Fatalf("config round trip: got %+v, want %+v", got, cfg)
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
	if len(shards) < 2 {
		t.Fatalf("ShardBytes 20000 wrote %d shard(s), want several", len(shards))
	}
	ck, err := weights.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if err := got.CheckTensors(ck); err != nil {
		t.Fatal(err)
	}
	// Norms are near 1, q is zero-mean with variance about 1.5^2/fan-in.
	norm, err := ck.Tensor(weights.LayerTensorName(0, "input_layernorm.weight"))
	if err != nil {
		t.Fatal(err)
	}
	if norm.DType != weights.BF16 {
		t.Fatalf("stored %s, want BF16", norm.DType)
	}
	rows := make([]float32, cfg.Dim)
	if err := ck.Rows(weights.LayerTensorName(0, "input_layernorm.weight"), 0, rows); err != nil {
		t.Fatal(err)
	}
	for i, v := range rows {
		if v < 0.4 || v > 1.6 {
			t.Fatalf("norm[%d] = %v, want near 1", i, v)
		}
	}
	q := make([]float32, cfg.NHeads*cfg.HeadDim*cfg.Dim)
	if err := ck.Rows(weights.LayerTensorName(1, "self_attn.q_proj.weight"), 0, q); err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	for _, v := range q {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean, variance := sum/float64(len(q)), sq/float64(len(q))
	if mean > 0.01 || mean < -0.01 || variance < 0.8*2.25/64 || variance > 1.2*2.25/64 {
		t.Fatalf("q_proj mean %.4f variance %.5f, want 0 and about 1.5^2/64", mean, variance)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode("héllo", false)
	if len(ids) != len("héllo") {
		t.Fatalf("byte-level tokenizer encoded %q as %v, want one id a byte", "héllo", ids)
	}
	if s := tok.Decode(ids); s != "héllo" {
		t.Fatalf("decode(encode) = %q", s)
	}
}

func TestWriteRefusesExistingFolder(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, tiny(), Options{}); err == nil {
		t.Fatal("Write into a folder that holds a file: no error")
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Fatalf("the folder's file was touched: %q, %v", b, err)
	}
}

// The shapes are the real models' sizes: check their parameter counts.
func TestShapesParameterCounts(t *testing.T) {
	want := map[string]float64{ // billions, as the model cards give them
		"llama-3.2-1b": 1.236, "llama-3.1-8b": 8.030, "qwen2.5-0.5b": 0.494, "smollm2-135m": 0.1349,
		"qwen3-0.6b": 0.596, // 0.44B without the embedding, as its model card gives it, and 151936 x 1024
		"gemma3-1b":  1.000,
	}
	for _, name := range Names() {
		cfg := Shapes[name]
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var n int64
		for _, sp := range cfg.ExpectedTensors() {
			m := int64(1)
			for _, d := range sp.Shape {
				m *= int64(d)
			}
			n += m
		}
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: no reference parameter count", name)
			continue
		}
		if got := float64(n) / 1e9; got < w*0.995 || got > w*1.005 {
			t.Errorf("%s: %.4fB parameters, want %.4fB", name, got, w)
		}
	}
}
