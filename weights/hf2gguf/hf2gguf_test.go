package hf2gguf

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/synth"
)

func convert(t *testing.T, cfg weights.Config, o Options) (*weights.Checkpoint, *gguf.File) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(dir, cfg, synth.Options{DType: weights.F16, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if err := Convert(dir, out, o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := weights.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck, f
}

func f32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// A llama3-scaled llama: its hyperparameters under llama.*, q and k rows permuted per head
// (row j of a head's first half at 2j, of its second half at 2j+1), v as it is, rope_freqs
// 1 for short wavelengths and the factor for long ones, the tokenizer padded to the vocabulary.
func TestLlamaFile(t *testing.T) {
	cfg := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
		Vocab: 300, MaxSeq: 4096, RopeTheta: 500000, RMSEps: 1e-5, TieEmbed: true, BOS: 298, EOS: []int{299},
		RopeScaling: &weights.RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 64}}
	ck, f := convert(t, cfg, Options{FileType: FileF32})
	for key, want := range map[string]any{
		"general.architecture": "llama", "llama.block_count": uint32(2), "llama.attention.head_count_kv": uint32(2),
		"llama.rope.freq_base": float32(500000), "llama.context_length": uint32(4096), "tokenizer.ggml.model": "gpt2",
		"tokenizer.ggml.pre": "gpt-2", "tokenizer.ggml.bos_token_id": uint32(298), "tokenizer.ggml.eos_token_id": uint32(299),
	} {
		if got, ok := f.Get(key); !ok || got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if toks, _ := f.Get("tokenizer.ggml.tokens"); len(toks.(gguf.Array).Elements().([]string)) != cfg.Vocab {
		t.Errorf("tokens: %d, want the vocabulary's %d", len(toks.(gguf.Array).Elements().([]string)), cfg.Vocab)
	}
	if _, _, ok := f.Tensor("output.weight"); ok {
		t.Error("a tied model has an output.weight")
	}
	hf := make([]float32, cfg.NKVHeads*cfg.HeadDim*cfg.Dim)
	if err := ck.Rows(weights.LayerTensorName(1, weights.WkSuffix), 0, hf); err != nil {
		t.Fatal(err)
	}
	info, b, ok := f.Tensor("blk.1.attn_k.weight")
	if !ok || !slices.Equal(info.Dims, []uint64{64, 32}) || info.Type != gguf.F32 {
		t.Fatalf("blk.1.attn_k.weight: %+v", info)
	}
	gg, hd, dim := f32s(b), cfg.HeadDim, cfg.Dim
	for h := 0; h < cfg.NKVHeads; h++ {
		for j := 0; j < hd/2; j++ {
			first, second := hf[(h*hd+j)*dim:][:dim], hf[(h*hd+hd/2+j)*dim:][:dim]
			if !slices.Equal(gg[(h*hd+2*j)*dim:][:dim], first) || !slices.Equal(gg[(h*hd+2*j+1)*dim:][:dim], second) {
				t.Fatalf("head %d pair %d: not permuted for llama.cpp's rope", h, j)
			}
		}
	}
	_, b, _ = f.Tensor("rope_freqs.weight")
	freqs := f32s(b)
	if len(freqs) != hd/2 || freqs[0] != 1 || freqs[len(freqs)-1] != 32 {
		t.Errorf("rope_freqs %v: want 1 for the shortest wavelength, 32 for the longest", freqs)
	}
	_, f2 := convert(t, cfg, Options{FileType: FileF16, NoRopeScaling: true})
	if _, _, ok := f2.Tensor("rope_freqs.weight"); ok {
		t.Error("NoRopeScaling wrote rope_freqs")
	}
	if info, _, _ := f2.Tensor("blk.0.ffn_up.weight"); info.Type != gguf.F16 {
		t.Errorf("F16 matrices: ffn_up is %v", info.Type)
	}
	if info, _, _ := f2.Tensor("blk.0.attn_norm.weight"); info.Type != gguf.F32 {
		t.Errorf("norms stay F32: attn_norm is %v", info.Type)
	}
}

// qwen3: no permutation (NEOX rope), q/k norms, key_length the head width.
func TestQwen3File(t *testing.T) {
	cfg := weights.Config{Arch: "qwen3", Dim: 64, HiddenDim: 96, NLayers: 1, NHeads: 2, NKVHeads: 1, HeadDim: 48,
		Vocab: 300, MaxSeq: 512, RopeTheta: 1e6, RMSEps: 1e-6, QKNorm: true, BOS: -1, EOS: []int{299}}
	ck, f := convert(t, cfg, Options{FileType: FileF32})
	if a, _ := f.Get("general.architecture"); a != "qwen3" {
		t.Fatalf("architecture %v", a)
	}
	if k, _ := f.Get("qwen3.attention.key_length"); k != uint32(48) {
		t.Errorf("key_length %v", k)
	}
	hf := make([]float32, cfg.NHeads*cfg.HeadDim*cfg.Dim)
	if err := ck.Rows(weights.LayerTensorName(0, weights.WqSuffix), 0, hf); err != nil {
		t.Fatal(err)
	}
	if _, b, _ := f.Tensor("blk.0.attn_q.weight"); !slices.Equal(f32s(b), hf) {
		t.Error("qwen3's q was permuted")
	}
	for _, name := range []string{"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight", "output.weight"} {
		if _, _, ok := f.Tensor(name); !ok {
			t.Errorf("no %s", name)
		}
	}
	if _, ok := f.Get("tokenizer.ggml.bos_token_id"); ok {
		t.Error("a model without BOS has a bos_token_id")
	}
}

func TestConvertRefusals(t *testing.T) {
	if err := Convert(t.TempDir(), filepath.Join(t.TempDir(), "x.gguf"), Options{FileType: FileType{Name: "q3_k"}}); err == nil {
		t.Error("a file type it does not know: no error")
	}
	if err := Convert(t.TempDir(), filepath.Join(t.TempDir(), "x.gguf"), Options{}); err == nil {
		t.Error("an empty folder: no error")
	}
}

// gemma3: arch gemma3, its norms stored as 1 + w (llama.cpp multiplies by the stored value),
// its sliding window and local rope base as keys, its norms under llama.cpp's names.
func TestGemma3File(t *testing.T) {
	cfg := weights.Config{Arch: "gemma3_text", Dim: 64, HiddenDim: 96, NLayers: 6, NHeads: 2, NKVHeads: 1, HeadDim: 32,
		Vocab: 300, MaxSeq: 512, RopeTheta: 1e6, RMSEps: 1e-6, TieEmbed: true, BOS: 298, EOS: []int{299},
		QKNorm: true, NormPlusOne: true, GeluTanh: true, PostNorms: true, EmbedScale: 8, AttnScale: 1 / math.Sqrt(32),
		SlidingWindow: 16, SlidingLayers: []bool{true, true, true, true, true, false}, RopeLocalTheta: 10000}
	ck, f := convert(t, cfg, Options{FileType: FileF32})
	for key, want := range map[string]any{"general.architecture": "gemma3", "gemma3.attention.sliding_window": uint32(16),
		"gemma3.rope.freq_base_swa": float32(10000), "gemma3.rope.freq_base": float32(1e6)} {
		if got, ok := f.Get(key); !ok || got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	for gname, hf := range map[string]string{"blk.2.post_attention_norm.weight": weights.PostAttnNormSuffix,
		"blk.2.ffn_norm.weight": weights.PreFFNNormSuffix, "blk.2.post_ffw_norm.weight": weights.PostFFNNormSuffix,
		"blk.2.attn_q_norm.weight": weights.QNormSuffix} {
		_, b, ok := f.Tensor(gname)
		if !ok {
			t.Fatalf("no %s", gname)
		}
		v := f32s(b)
		w := make([]float32, len(v))
		if err := ck.Rows(weights.LayerTensorName(2, hf), 0, w); err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if v[i] != w[i]+1 {
				t.Fatalf("%s[%d] = %v, want 1 + %v", gname, i, v[i], w[i])
			}
		}
	}
	bad := cfg
	bad.SlidingLayers = []bool{true, false, true, true, true, false}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(dir, bad, synth.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Convert(dir, filepath.Join(t.TempDir(), "x.gguf"), Options{}); err == nil {
		t.Error("a layer pattern llama.cpp would not compute: no error")
	}
}
