package llama2c

import (
	"path/filepath"

	"github.com/wspec/wspec/weights"
)

// Convert writes the Hugging Face model folder outDir from a llama2.c
// model.bin and tokenizer.bin:
//
//   - model.safetensors: F32 tensors under Hugging Face Llama names; no
//     lm_head.weight when the classifier is shared (tie_word_embeddings).
//   - config.json: llama, rope_theta 10000, rms_norm_eps 1e-5,
//     max_position_embeddings = seq_len, bos 1, eos 2.
//   - generation_config.json: bos 1, eos [1, 2] — stories models end a story
//     by emitting BOS, and llama2.c stops there.
//   - tokenizer.json and tokenizer_config.json: see WriteTokenizer.
//
// The folder is written whole or not at all (weights.WriteFolder): an outDir
// that exists and is not empty is refused with weights.ErrFolderExists unless
// force is set, and then replaced only once the new folder is complete; a
// conversion that fails leaves outDir as it was.
//
// RoPE layout: llama2.c rotates adjacent pairs (x[2i], x[2i+1]) of each head,
// Hugging Face Llama rotates halves (x[i], x[i+hd/2]). Convert therefore
// permutes the rows of wq and wk within each head so that the Hugging Face
// rotation computes the same attention scores: see PermuteRoPERows.
func Convert(modelBin, tokenizerBin, outDir string, force bool) error {
	mc, sec, err := readSections(modelBin)
	if err != nil {
		return err
	}
	tok, err := ReadTokenizer(tokenizerBin, mc.Vocab)
	if err != nil {
		return err
	}
	cfg := Config(mc)
	return weights.WriteFolder(outDir, force, func(dir string) error {
		if err := weights.WriteSafeTensors(filepath.Join(dir, weights.SingleFileName), tensors(mc, cfg, sec),
			map[string]string{"format": "pt", "source": "llama2.c"}); err != nil {
			return err
		}
		if err := weights.WriteConfig(dir, cfg); err != nil {
			return err
		}
		if err := weights.WriteGenerationConfig(dir, BOS, []int{BOS, EOS}); err != nil {
			return err
		}
		return WriteTokenizer(dir, tok)
	})
}

// Token ids of llama2.c's (Llama-2's) special tokens.
const (
	UNK = 0
	BOS = 1
	EOS = 2
)

// Config is the weights.Config of a converted model.bin.
func Config(mc ModelConfig) *weights.Config {
	return &weights.Config{
		Arch:      "llama",
		Dim:       mc.Dim,
		HiddenDim: mc.HiddenDim,
		NLayers:   mc.NLayers,
		NHeads:    mc.NHeads,
		NKVHeads:  mc.NKVHeads,
		HeadDim:   mc.HeadSize(),
		Vocab:     mc.Vocab,
		MaxSeq:    mc.SeqLen,
		RopeTheta: 10000,
		RMSEps:    1e-5,
		TieEmbed:  mc.Shared,
		BOS:       BOS,
		EOS:       []int{EOS},
	}
}

// tensors cuts the sections into per-layer tensors, in ExpectedTensors order.
func tensors(mc ModelConfig, cfg *weights.Config, sec map[string][]byte) []weights.Tensor {
	d, kv, h, hs := mc.Dim, mc.KVDim(), mc.HiddenDim, mc.HeadSize()
	layer := func(name string, i, n int) []byte { return sec[name][4*i*n : 4*(i+1)*n] }
	var out []weights.Tensor
	for _, spec := range cfg.ExpectedTensors() {
		out = append(out, weights.Tensor{Name: spec.Name, DType: weights.F32, Shape: spec.Shape})
	}
	k := 0
	set := func(data []byte) { out[k].Data = data; k++ }
	set(sec["token_embedding"])
	for i := 0; i < mc.NLayers; i++ {
		set(layer("rms_att", i, d))
		set(PermuteRoPERows(layer("wq", i, d*d), d, hs, 4))
		set(PermuteRoPERows(layer("wk", i, kv*d), d, hs, 4))
		set(layer("wv", i, kv*d))
		set(layer("wo", i, d*d))
		set(layer("rms_ffn", i, d))
		set(layer("w1", i, h*d)) // gate_proj
		set(layer("w3", i, h*d)) // up_proj
		set(layer("w2", i, d*h)) // down_proj
	}
	set(sec["rms_final"])
	if !mc.Shared {
		set(sec["wcls"])
	}
	return out
}

// PermuteRoPERows reorders the rows of a projection matrix (row-major, rows
// of cols elements of elemSize bytes, rows grouped into heads of headSize) from
// llama2.c's RoPE layout to Hugging Face's: within each head, row j of the
// result is row 2j of the input for j < headSize/2 and row 2(j-headSize/2)+1
// otherwise. llama2.c rotates the pair (2i, 2i+1) by angle θ_i; after the
// permutation those two rows sit at i and i+headSize/2, the pair Hugging
// Face's rotate_half rotates by the same θ_i. Queries and keys are permuted
// alike, so their dot products — the attention scores — are unchanged. This is
// the inverse of the permute in transformers' convert_llama_weights_to_hf.py.
func PermuteRoPERows(m []byte, cols, headSize, elemSize int) []byte {
	row := cols * elemSize
	out := make([]byte, len(m))
	rows := len(m) / row
	half := headSize / 2
	for h := 0; h+headSize <= rows; h += headSize {
		for j := 0; j < headSize; j++ {
			src := 2 * j
			if j >= half {
				src = 2*(j-half) + 1
			}
			copy(out[(h+j)*row:(h+j+1)*row], m[(h+src)*row:(h+src+1)*row])
		}
	}
	return out
}
