//go:build long

package model

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/hf2gguf"
	"github.com/wspec/wspec/weights/synth"
	"github.com/wspec/wspec/wgsl"
)

// (CI's long tier: go test -tags long -run GGUFQuantizedLogits ./runtime/model/; on a cold machine
// its Q4_K pipelines cost a minute of the quick tier's ten. The quick tier keeps the quantized
// kernels' cases in the portability suite and spec/engine's quantized-target tests.)
//
// TestGGUFQuantizedLogits: a checkpoint converted to GGUF in each quantized file type loads with
// its matrices kept quantized on the device (read from the file in chunks that cross the fused
// matrices' parts; a K-quant mix stacks Q4_K q and k over a Q6_K v in one matrix), and the
// device's logits for a prompt and a decode step match the reference forward of the weights
// the file decodes to.
func TestGGUFQuantizedLogits(t *testing.T) {
	d := testDevice(t)
	defer func(old int) { chunkBytes = old }(chunkBytes)
	chunkBytes = 3000
	cfg := weights.Config{Arch: "llama", Dim: 256, HiddenDim: 512, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 64,
		Vocab: 300, MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5, BOS: 298, EOS: []int{299}}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(dir, cfg, synth.Options{DType: weights.F32, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	// One file type (each type costs its kernels' compilation on a CPU adapter, seconds a
	// pipeline): Q4_K_M, whose K types are stacked in one matrix. Every type is compared with
	// llama.cpp in the long tier (spec/engine's oracle test) and each type's kernels with
	// their reference in the portability suite (Q8_0's blocks at 2-byte offsets on every block).
	for _, ft := range []hf2gguf.FileType{hf2gguf.FileQ4_K_M} {
		t.Run(ft.Name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "m.gguf")
			if err := hf2gguf.Convert(dir, file, hf2gguf.Options{FileType: ft}); err != nil {
				t.Fatal(err)
			}
			wm, err := weights.OpenModel(file)
			if err != nil {
				t.Fatal(err)
			}
			defer wm.Close()
			host, err := weights.LlamaFrom(wm.Config, wm.Source, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(d, *wm.Config, wm.Source, Options{Weights: wgsl.F32, PageSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Release()
			for _, lin := range []struct {
				name  string
				types []wgsl.WeightType
			}{{"embed", m.embed.Types()}, {"layer 1 qkv", m.layers[1].qkv.Types()}, {"layer 0 w2", m.layers[0].w2.Types()}} {
				if len(lin.types) == 0 || !lin.types[0].Quantized() {
					t.Errorf("%s is %v on the device, want quantized", lin.name, lin.types)
				}
			}
			// llama-quantize's Q4_K_M gives the last layer's v (and the tied embedding) Q6_K.
			if q := m.layers[1].qkv.Types(); ft == hf2gguf.FileQ4_K_M && !slices.Equal(q, []wgsl.WeightType{wgsl.Q4_K, wgsl.Q6_K}) {
				t.Errorf("Q4_K_M layer 1 qkv is %v, want [q4_k q6_k]", q)
			}
			stepsMatchReference(t, m, host, [][]int{{298, 5, 77, 120, 3, 9, 250, 31, 64, 2}, {42}})
		})
	}
}
