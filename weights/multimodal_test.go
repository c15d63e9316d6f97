package weights_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/synth"
)

// A multimodal Gemma 3 folder (model_type gemma3, as Gemma 3 4B and larger ship: the language
// model under language_model.model.* or model.language_model.*, beside a vision tower) loads as
// its language model: the same config as the text-only folder it was made from (sizes left to
// Gemma3TextConfig's defaults filled in, the top level's token ids taken), the same tensors
// under the text model's names, the vision tensors hidden.
func TestMultimodalGemma3Folder(t *testing.T) {
	cfg := weights.Config{Arch: "gemma3_text", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 2, NKVHeads: 1, HeadDim: 32,
		Vocab: 300, MaxSeq: 512, RopeTheta: 1e6, RMSEps: 1e-6, TieEmbed: true, BOS: 2, EOS: []int{1, 106},
		QKNorm: true, NormPlusOne: true, GeluTanh: true, PostNorms: true, EmbedScale: 8, AttnScale: 1.0 / 16,
		SlidingWindow: 16, SlidingLayers: []bool{true, false}, RopeLocalTheta: 10000,
		RopeScaling: &weights.RopeScaling{Linear: true, Factor: 8}}
	text := filepath.Join(t.TempDir(), "text")
	if err := synth.Write(text, cfg, synth.Options{DType: weights.F16, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	want, err := weights.OpenModel(text)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	for _, prefix := range []string{"language_model.model.", "model.language_model."} {
		t.Run(strings.TrimSuffix(prefix, "."), func(t *testing.T) {
			dir := multimodal(t, text, prefix)
			got, err := weights.OpenModel(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			if !reflect.DeepEqual(got.Config, want.Config) {
				t.Fatalf("config:\n%+v\nthe text model's:\n%+v", got.Config, want.Config)
			}
			ck, err := weights.OpenCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			wck, _ := weights.OpenCheckpoint(text)
			defer wck.Close()
			if !slices.Equal(ck.Names(), wck.Names()) {
				t.Fatalf("tensors %v, the text model's %v", ck.Names(), wck.Names())
			}
			for _, n := range wck.Names() {
				a, err1 := ck.Tensor(n)
				b, err2 := wck.Tensor(n)
				if err1 != nil || err2 != nil || a.Name != n || !slices.Equal(a.Data, b.Data) || !slices.Equal(a.Shape, b.Shape) {
					t.Fatalf("%s: %v %v", n, err1, err2)
				}
			}
		})
	}
}

// multimodal writes the text model's folder as a multimodal Gemma 3 one, its language model's
// tensors under prefix.
func multimodal(t *testing.T, text, prefix string) string {
	dir := t.TempDir()
	ck, err := weights.OpenCheckpoint(text)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	var tensors []weights.Tensor
	for _, n := range ck.Names() {
		tt, _ := ck.Tensor(n)
		tt.Name = prefix + strings.TrimPrefix(n, "model.")
		tensors = append(tensors, tt)
	}
	outer := "" // where the vision tower and the projector are: beside the language model
	if prefix == "model.language_model." {
		outer = "model."
	}
	vision := make([]byte, 8*4)
	tensors = append(tensors, weights.Tensor{Name: outer + "vision_tower.vision_model.post_layernorm.weight", DType: weights.F32, Shape: []int{8}, Data: vision},
		weights.Tensor{Name: outer + "multi_modal_projector.mm_soft_emb_norm.weight", DType: weights.F32, Shape: []int{8}, Data: vision})
	if err := weights.WriteSafeTensors(filepath.Join(dir, weights.SingleFileName), tensors, nil); err != nil {
		t.Fatal(err)
	}
	var tc map[string]any
	b, err := os.ReadFile(filepath.Join(text, "config.json"))
	if err != nil || json.Unmarshal(b, &tc) != nil {
		t.Fatal(err)
	}
	top := map[string]any{"model_type": "gemma3", "architectures": []string{"Gemma3ForConditionalGeneration"},
		"eos_token_id": tc["eos_token_id"], "bos_token_id": tc["bos_token_id"], "text_config": tc,
		"vision_config": map[string]any{"model_type": "siglip_vision_model", "hidden_size": 1152}}
	// as the real ones: ids at the top only, and a size left to Gemma3TextConfig's default
	for _, k := range []string{"eos_token_id", "bos_token_id", "tie_word_embeddings", "rms_norm_eps"} {
		delete(tc, k)
	}
	b, _ = json.Marshal(top)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		if b, err := os.ReadFile(filepath.Join(text, f)); err == nil {
			os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
	}
	return dir
}
