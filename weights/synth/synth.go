// Package synth writes checkpoints at real models' sizes, for tests and benchmarks where no
// weights can be downloaded: random weights in the shapes of real models (Llama-3.2-1B,
// Llama-3.1-8B, Qwen2.5-0.5B, ...; Write), or a small trained model inflated to a real size
// that computes the same function (Inflate, WriteInflated), as Hugging Face folders. The weights are scaled so that the logits are
// peaked (greedy text is not a tie of near-equal tokens), and written shard by shard with a
// model.safetensors.index.json, never the whole model in memory.
package synth

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wspec/wspec/weights"
)

// Shapes are the real models' shapes by name (config.json's sizes; random weights).
var Shapes = map[string]weights.Config{
	"llama-3.2-1b": {Arch: "llama", Dim: 2048, HiddenDim: 8192, NLayers: 16, NHeads: 32, NKVHeads: 8, HeadDim: 64,
		Vocab: 128256, MaxSeq: 131072, RopeTheta: 500000, RMSEps: 1e-5, TieEmbed: true, BOS: 128000, EOS: []int{128001},
		RopeScaling: &weights.RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192}},
	"llama-3.1-8b": {Arch: "llama", Dim: 4096, HiddenDim: 14336, NLayers: 32, NHeads: 32, NKVHeads: 8, HeadDim: 128,
		Vocab: 128256, MaxSeq: 131072, RopeTheta: 500000, RMSEps: 1e-5, BOS: 128000, EOS: []int{128001},
		RopeScaling: &weights.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192}},
	"qwen2.5-0.5b": {Arch: "qwen2", Dim: 896, HiddenDim: 4864, NLayers: 24, NHeads: 14, NKVHeads: 2, HeadDim: 64,
		Vocab: 151936, MaxSeq: 32768, RopeTheta: 1000000, RMSEps: 1e-6, TieEmbed: true, AttnBias: true, BOS: -1, EOS: []int{151643}},
	"qwen3-0.6b": {Arch: "qwen3", Dim: 1024, HiddenDim: 3072, NLayers: 28, NHeads: 16, NKVHeads: 8, HeadDim: 128,
		Vocab: 151936, MaxSeq: 40960, RopeTheta: 1000000, RMSEps: 1e-6, TieEmbed: true, QKNorm: true, BOS: 151643, EOS: []int{151645}},
	"gemma3-1b": {Arch: "gemma3_text", Dim: 1152, HiddenDim: 6912, NLayers: 26, NHeads: 4, NKVHeads: 1, HeadDim: 256,
		Vocab: 262144, MaxSeq: 32768, RopeTheta: 1000000, RMSEps: 1e-6, TieEmbed: true, BOS: 2, EOS: []int{1},
		QKNorm: true, NormPlusOne: true, GeluTanh: true, PostNorms: true, EmbedScale: math.Sqrt(1152), AttnScale: 1.0 / 16,
		SlidingWindow: 512, SlidingLayers: gemmaLayers(26, 6), RopeLocalTheta: 10000},
	"smollm2-135m": {Arch: "llama", Dim: 576, HiddenDim: 1536, NLayers: 30, NHeads: 9, NKVHeads: 3, HeadDim: 64,
		Vocab: 49152, MaxSeq: 8192, RopeTheta: 100000, RMSEps: 1e-5, TieEmbed: true, BOS: 0, EOS: []int{0}},
}

// gemmaLayers is Gemma 3's sliding layers: every pattern-th layer global, the others local.
func gemmaLayers(n, pattern int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = (i+1)%pattern != 0
	}
	return out
}

// Names lists the shapes, sorted.
func Names() []string {
	var out []string
	for n := range Shapes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Options choose the random checkpoint.
type Options struct {
	DType      weights.DType // F16, BF16 or F32 storage
	Seed       uint64
	ShardBytes int64  // about this many bytes a shard (default 1 GiB)
	Tokenizer  string // a tokenizer.json to copy (default: a byte-level one of 256 bytes + BOS/EOS)
}

// Write writes a random checkpoint of shape cfg into dir (which must not exist): config.json,
// generation_config.json, tokenizer.json and safetensors shards with their index.
func Write(dir string, cfg weights.Config, o Options) error {
	if o.DType == "" {
		o.DType = weights.F16
	}
	if o.ShardBytes <= 0 {
		o.ShardBytes = 1 << 30
	}
	return weights.WriteFolder(dir, false, func(tmp string) error {
		if err := weights.WriteConfig(tmp, &cfg); err != nil {
			return err
		}
		if err := writeTokenizer(tmp, cfg, o.Tokenizer); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(o.Seed, 0x5EED))
		return writeShards(tmp, cfg, o, func(sp weights.TensorSpec, n int) ([]float32, error) {
			return values(rng, sp, cfg, n), nil
		})
	})
}

// writeShards writes cfg's tensors in file order, a shard at a time, each tensor's values
// from value (n is its element count).
func writeShards(dir string, cfg weights.Config, o Options, value func(sp weights.TensorSpec, n int) ([]float32, error)) error {
	elem := int64(o.DType.Size())
	specs := cfg.ExpectedTensors()
	weightMap := map[string]string{}
	var shard []weights.Tensor
	var shardBytes int64
	nShards := 0
	var names []string
	flush := func() error {
		if len(shard) == 0 {
			return nil
		}
		nShards++
		name := fmt.Sprintf("model-%05d.safetensors", nShards)
		names = append(names, name)
		for _, t := range shard {
			weightMap[t.Name] = name
		}
		err := weights.WriteSafeTensors(filepath.Join(dir, name), shard, map[string]string{"format": "pt"})
		shard, shardBytes = nil, 0
		return err
	}
	for _, sp := range specs {
		n := 1
		for _, d := range sp.Shape {
			n *= d
		}
		if shardBytes+int64(n)*elem > o.ShardBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		v, err := value(sp, n)
		if err != nil {
			return err
		}
		var t weights.Tensor
		switch o.DType {
		case weights.F32:
			t = weights.F32Tensor(sp.Name, sp.Shape, v)
		case weights.BF16:
			t = weights.BF16Tensor(sp.Name, sp.Shape, v)
		default:
			t = weights.F16Tensor(sp.Name, sp.Shape, v)
		}
		shard, shardBytes = append(shard, t), shardBytes+int64(len(t.Data))
	}
	if err := flush(); err != nil {
		return err
	}
	// Rename model-0000i.safetensors to model-0000i-of-0000n.safetensors, as transformers does.
	final := map[string]string{}
	for i, name := range names {
		to := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, nShards)
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, to)); err != nil {
			return err
		}
		final[name] = to
	}
	for k, v := range weightMap {
		weightMap[k] = final[v]
	}
	b, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, weights.IndexFileName), b, 0o644)
}

// values draws a tensor's random values so that greedy text is neither a tie of near-equal
// tokens nor an echo of the last token (what llama.cpp's gguf notes advise): the embedding
// (and LM head) small, std 0.02 as real models are initialized, so the residual stream is the
// layers' work and not the token's own embedding; the final norm's weight large, so the logits
// have a std of about 10; q and k wider (std 1.5/sqrt(fan-in)) so attention is sharp; the other
// matrices N(0, 1/fan-in), norms near 1, biases small.
func values(rng *rand.Rand, sp weights.TensorSpec, cfg weights.Config, n int) []float32 {
	v := make([]float32, n)
	name := sp.Name
	fanIn := float64(sp.Shape[len(sp.Shape)-1])
	fill := func(mean, std float64) []float32 {
		for i := range v {
			v[i] = float32(mean + std*rng.NormFloat64())
		}
		return v
	}
	one := 1.0 // what a norm multiplies by is w, or 1 + w (Gemma): store about one - 1 + that
	if cfg.NormPlusOne {
		one = 0
	}
	switch {
	case name == weights.NormTensorName:
		g := 10 / (embedStd * math.Sqrt(float64(cfg.Dim)))
		return fill(g-1+one, 0.1*g)
	case strings.HasSuffix(name, "norm.weight"):
		return fill(one, 0.1)
	case strings.HasSuffix(name, ".bias"):
		return fill(0, 0.02)
	case name == weights.EmbedTensorName || name == weights.LMHeadTensorName:
		return fill(0, embedStd)
	case strings.HasSuffix(name, weights.WqSuffix) || strings.HasSuffix(name, weights.WkSuffix):
		return fill(0, 1.5/math.Sqrt(fanIn))
	}
	return fill(0, 1/math.Sqrt(fanIn))
}

// embedStd is the embedding's (and LM head's) standard deviation.
const embedStd = 0.02

// writeTokenizer copies the tokenizer.json given, or writes a byte-level BPE tokenizer of the
// 256 bytes and the config's BOS and EOS (ids past them unused).
func writeTokenizer(dir string, cfg weights.Config, from string) error {
	dst := filepath.Join(dir, "tokenizer.json")
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	}
	vocab := map[string]int{}
	for i, r := range byteRunes() {
		vocab[string(r)] = i
	}
	var added []map[string]any
	for _, id := range append([]int{cfg.BOS}, cfg.EOS...) {
		if id < 0 {
			continue
		}
		name := fmt.Sprintf("<|special_%d|>", id)
		if id < 256 {
			continue // a byte's id (small vocabularies): no special token
		}
		vocab[name] = id
		added = append(added, map[string]any{"id": id, "content": name, "special": true, "single_word": false,
			"lstrip": false, "rstrip": false, "normalized": false})
	}
	doc := map[string]any{
		"version":        "1.0",
		"added_tokens":   added,
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}, "byte_fallback": false},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// byteRunes is GPT-2's byte-to-unicode table: byte b's character.
func byteRunes() []rune {
	var out [256]rune
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			out[b] = rune(b)
		} else {
			out[b] = rune(256 + n)
			n++
		}
	}
	return out[:]
}
