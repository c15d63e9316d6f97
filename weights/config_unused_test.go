package weights

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSpecs writes a model.safetensors holding zero-filled F32 tensors of the
// given names and shapes, and opens it as a checkpoint.
func writeSpecs(t *testing.T, specs []TensorSpec) *Checkpoint {
	t.Helper()
	var ts []Tensor
	for _, s := range specs {
		n, _ := numElements(s.Shape)
		ts = append(ts, F32Tensor(s.Name, s.Shape, make([]float32, n)))
	}
	dir := t.TempDir()
	if err := WriteSafeTensors(filepath.Join(dir, SingleFileName), ts, nil); err != nil {
		t.Fatal(err)
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

func tinyLlama(layers int) *Config {
	return &Config{Arch: "llama", Dim: 8, HiddenDim: 12, NLayers: layers, NHeads: 2, NKVHeads: 1, HeadDim: 4,
		Vocab: 10, MaxSeq: 16, RopeTheta: 1e4, RMSEps: 1e-5, BOS: -1}
}

// A config.json that declares fewer layers than the file holds, or no biases
// where the file has them, is refused with the unused tensors named: the
// forward pass would silently skip them.
func TestCheckTensorsRefusesUnused(t *testing.T) {
	six, eight := tinyLlama(6), tinyLlama(8)
	tied := *six
	tied.TieEmbed = true
	ck := writeSpecs(t, eight.ExpectedTensors())
	err := six.CheckTensors(ck)
	if !errors.Is(err, ErrUnusedTensor) {
		t.Fatalf("8-layer file, 6-layer config: got %v, want ErrUnusedTensor", err)
	}
	// 2 extra layers of 9 tensors: a few named, the rest counted, the layer count said.
	for _, want := range []string{"18 tensors", `"model.layers.6.`, "and 13 more", "layers 0..7", "num_hidden_layers is 6"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := eight.CheckTensors(ck); err != nil {
		t.Fatalf("the right config: %v", err)
	}

	cases := []struct {
		name  string
		cfg   *Config
		extra []TensorSpec
		want  string // "" when accepted
	}{
		{"unknown tensor", six, []TensorSpec{{"model.extra.weight", []int{2}}}, `"model.extra.weight"`},
		{"llama o_proj bias", six, []TensorSpec{{LayerTensorName(0, "self_attn.o_proj.bias"), []int{8}}}, "o_proj.bias"},
		{"q bias without attention_bias", six, []TensorSpec{{LayerTensorName(3, BqSuffix), []int{8}}}, "q_proj.bias"},
		{"mlp bias", six, []TensorSpec{{LayerTensorName(1, "mlp.down_proj.bias"), []int{8}}}, "down_proj.bias"},
		{"inv_freq of a layer beyond the config", six, []TensorSpec{{LayerTensorName(6, "self_attn.rotary_emb.inv_freq"), []int{2}}}, "rotary_emb.inv_freq"},
		{"exactly the expected tensors", six, nil, ""},
		// Hugging Face sometimes saves lm_head.weight of a tied model too: the
		// embedding serves as the LM head and the copy is ignored.
		{"tied with an lm_head too", &tied, []TensorSpec{{LMHeadTensorName, []int{10, 8}}}, ""},
		{"old HF rotary buffers", six, []TensorSpec{
			{LayerTensorName(0, "self_attn.rotary_emb.inv_freq"), []int{2}},
			{LayerTensorName(5, "self_attn.rotary_emb.inv_freq"), []int{2}},
			{"model.rotary_emb.inv_freq", []int{2}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.CheckTensors(writeSpecs(t, append(tc.cfg.ExpectedTensors(), tc.extra...)))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnusedTensor) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrUnusedTensor naming %s", err, tc.want)
			}
		})
	}
}

// A shard holding a tensor that model.safetensors.index.json does not list is
// refused: the checkpoint would silently not see it.
func TestShardedRefusesUnlistedTensor(t *testing.T) {
	dir := t.TempDir()
	a := F32Tensor("a", []int{1}, []float32{1})
	b := F32Tensor("b", []int{1}, []float32{2})
	if err := WriteSafeTensors(filepath.Join(dir, "s1.safetensors"), []Tensor{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteSafeTensors(filepath.Join(dir, "s2.safetensors"), []Tensor{b}, nil); err != nil {
		t.Fatal(err)
	}
	for _, idx := range []string{
		`{"weight_map":{"a":"s1.safetensors"}}`,                      // b in s1 unlisted
		`{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`, // s1's b shadowed by s2's
	} {
		os.WriteFile(filepath.Join(dir, IndexFileName), []byte(idx), 0o644)
		ck, err := OpenCheckpoint(dir)
		if err == nil {
			ck.Close()
		}
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `"b"`) || !strings.Contains(err.Error(), "s1.safetensors") {
			t.Errorf("index %s: got %v, want ErrMalformed naming b in s1.safetensors", idx, err)
		}
	}
	os.WriteFile(filepath.Join(dir, IndexFileName), []byte(`{"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}}`), 0o644)
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck.Close()
}
