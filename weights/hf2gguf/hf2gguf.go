// Package hf2gguf writes a Hugging Face model folder as a GGUF file that llama.cpp reads, as
// llama.cpp's convert_hf_to_gguf.py writes it: llama and mistral as arch "llama" with q and k
// rows permuted for llama.cpp's interleaved rope, llama3 rope scaling as a rope_freqs tensor,
// qwen2 and qwen3 as themselves (NEOX rope, no permutation), Gemma 3's text model as gemma3
// (its norm weights stored as 1 + w, as llama.cpp multiplies by the stored value), a
// byte-level BPE tokenizer as tokenizer.ggml.* "gpt2" and a SentencePiece-style one as "llama"
// (tokenizer_spm.go), with [PADn] tokens up to the embedding's rows. Tensors stream from the
// checkpoint to the file a chunk of rows at a time, quantized on the way as the file type says
// (filetype.go).
package hf2gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/quant"
)

// Options choose the file.
type Options struct {
	// FileType is the matrices' type, or llama-quantize's mix of types (FileQ4_K_M, ...); the
	// zero value is FileF32. Norms, biases and rope_freqs are F32, as llama.cpp writes them.
	FileType FileType
	// NoRopeScaling leaves out a llama3-scaled model's rope_freqs tensor, or a linearly scaled
	// one's rope.scaling keys (a negative control for comparisons: the file then computes
	// unscaled rope).
	NoRopeScaling bool
	// NoPermute writes llama's q and k rows unpermuted (a negative control).
	NoPermute bool
	// NoNormShift writes Gemma's norm weights as stored, not as 1 + w, and NoSlidingWindow
	// leaves out its sliding window (negative controls).
	NoNormShift, NoSlidingWindow bool
}

// Convert writes the model folder dir as the GGUF file out (which must not exist).
func Convert(dir, out string, o Options) error {
	if o.FileType == (FileType{}) {
		o.FileType = FileF32
	}
	if _, err := ParseFileType(o.FileType.Name); err != nil {
		return fmt.Errorf("hf2gguf: %w", err)
	}
	cfg, err := weights.LoadConfig(dir)
	if err != nil {
		return err
	}
	ck, err := weights.OpenCheckpoint(dir)
	if err != nil {
		return err
	}
	defer ck.Close()
	if err := cfg.CheckTensors(ck); err != nil {
		return err
	}
	if cfg.Arch == "gemma3_text" {
		if err := checkGemma(cfg); err != nil {
			return err
		}
	}
	tok, err := readTokenizer(dir, cfg)
	if err != nil {
		return err
	}
	arch := archName(cfg)
	kvs := append(modelKVs(cfg, arch, o), tok...)
	tensors, err := modelTensors(cfg, ck, arch, o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return gguf.WriteFile(out, kvs, tensors)
}

// archName is the GGUF architecture of cfg: mistral is llama to llama.cpp, gemma3_text gemma3.
func archName(c *weights.Config) string {
	switch c.Arch {
	case "mistral":
		return "llama"
	case "gemma3_text":
		return "gemma3"
	}
	return c.Arch
}

// checkGemma refuses a Gemma 3 configuration llama.cpp would compute differently: it takes
// every sixth layer as global, scales attention by 1/sqrt(head_dim) and the embedding by
// sqrt(hidden).
func checkGemma(c *weights.Config) error {
	for l := range c.NLayers {
		if c.Sliding(l) != ((l+1)%6 != 0) {
			return fmt.Errorf("hf2gguf: %w: gemma3 layer %d's attention (llama.cpp takes every sixth layer as global)", weights.ErrUnsupported, l)
		}
	}
	if math.Abs(c.AttnScale*math.Sqrt(float64(c.HeadDim))-1) > 1e-6 || math.Abs(c.EmbedScale-math.Sqrt(float64(c.Dim))) > 1e-6 {
		return fmt.Errorf("hf2gguf: %w: gemma3 query_pre_attn_scalar other than head_dim (llama.cpp scales by 1/sqrt(head_dim))", weights.ErrUnsupported)
	}
	return nil
}

// modelKVs are the architecture's hyperparameters under "<arch>." keys.
func modelKVs(c *weights.Config, arch string, o Options) []gguf.KV {
	fileType := o.FileType.number
	k := func(s string) string { return arch + "." + s }
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: arch},
		{Key: "general.name", Value: "wspec " + c.Arch},
		{Key: "general.file_type", Value: fileType},
		{Key: k("vocab_size"), Value: uint32(c.Vocab)},
		{Key: k("context_length"), Value: uint32(c.MaxSeq)},
		{Key: k("embedding_length"), Value: uint32(c.Dim)},
		{Key: k("block_count"), Value: uint32(c.NLayers)},
		{Key: k("feed_forward_length"), Value: uint32(c.HiddenDim)},
		{Key: k("attention.head_count"), Value: uint32(c.NHeads)},
		{Key: k("attention.head_count_kv"), Value: uint32(c.NKVHeads)},
		{Key: k("attention.key_length"), Value: uint32(c.HeadDim)},
		{Key: k("attention.value_length"), Value: uint32(c.HeadDim)},
		{Key: k("rope.freq_base"), Value: float32(c.RopeTheta)},
		{Key: k("rope.dimension_count"), Value: uint32(c.HeadDim)},
		{Key: k("attention.layer_norm_rms_epsilon"), Value: float32(c.RMSEps)},
	}
	if rs := c.RopeScaling; rs != nil && rs.Linear && !o.NoRopeScaling {
		// llama.cpp divides the frequencies by the factor (of the global layers, for Gemma 3)
		kvs = append(kvs, gguf.KV{Key: k("rope.scaling.type"), Value: "linear"},
			gguf.KV{Key: k("rope.scaling.factor"), Value: float32(rs.Factor)})
	}
	if c.SlidingWindow > 0 && !o.NoSlidingWindow {
		kvs = append(kvs, gguf.KV{Key: k("attention.sliding_window"), Value: uint32(c.SlidingWindow)},
			gguf.KV{Key: k("rope.freq_base_swa"), Value: float32(c.RopeLocalTheta)})
	}
	return kvs
}

// RopeFreqs is llama3 rope scaling as llama.cpp's per-frequency divisors (rope_freqs.weight):
// for frequency i of a head of hd, 1 where its wavelength is short, the factor where it is
// long, and a blend between, as generate_extra_tensors computes them.
func RopeFreqs(c *weights.Config) []float32 {
	rs, hd := c.RopeScaling, c.HeadDim
	low := float64(rs.OriginalMaxPos) / rs.LowFreqFactor
	high := float64(rs.OriginalMaxPos) / rs.HighFreqFactor
	out := make([]float32, hd/2)
	for i := range out {
		freq := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(hd))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < high:
			out[i] = 1
		case wavelen > low:
			out[i] = float32(rs.Factor)
		default:
			smooth := (float64(rs.OriginalMaxPos)/wavelen - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/rs.Factor + smooth))
		}
	}
	return out
}

// f32Bytes is v little-endian.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// writeRows writes rows of v in type t.
func writeRows(w io.Writer, v []float32, t gguf.TensorType) error {
	if quant.IsQuantized(t) {
		b, err := quant.Quantize(t, v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if t == gguf.F32 {
		_, err := w.Write(f32Bytes(v))
		return err
	}
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], weights.F32ToF16(x))
	}
	_, err := w.Write(b)
	return err
}
