package weights_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/hf2gguf"
	"github.com/wspec/wspec/weights/synth"
)

// An F16 GGUF file's rows read as half-precision bits are its values exactly: the bits that
// Rows decodes, in the same row order, for a matrix of each kind (q and k among them, whose
// rows the converter permuted and the reader un-permutes).
func TestGGUFHalfRowsAreTheStoredBits(t *testing.T) {
	cfg := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 1, NHeads: 4, NKVHeads: 2, HeadDim: 16,
		Vocab: 300, MaxSeq: 32, RopeTheta: 10000, RMSEps: 1e-5, BOS: 298, EOS: []int{299}}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(dir, cfg, synth.Options{DType: weights.F16, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "m.gguf")
	if err := hf2gguf.Convert(dir, file, hf2gguf.Options{FileType: hf2gguf.FileF16}); err != nil {
		t.Fatal(err)
	}
	wm, err := weights.OpenModel(file)
	if err != nil {
		t.Fatal(err)
	}
	defer wm.Close()
	hs := wm.Source
	for _, name := range []string{"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight", "model.layers.0.mlp.down_proj.weight"} {
		rows, cols, _, err := wm.Source.Shape(name)
		if err != nil {
			t.Fatal(err)
		}
		n := rows * cols
		f := make([]float32, n)
		h := make([]byte, 2*n)
		if err := wm.Source.Rows(name, 0, f); err != nil {
			t.Fatal(err)
		}
		if err := hs.HalfRows(name, 0, h); err != nil {
			t.Fatal(err)
		}
		for i := range f {
			if v := binary.LittleEndian.Uint16(h[2*i:]); weights.F16ToF32(v) != f[i] {
				t.Fatalf("%s value %d: half bits %#04x are %v, Rows gives %v", name, i, v, weights.F16ToF32(v), f[i])
			}
		}
	}
}
