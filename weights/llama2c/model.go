// Package llama2c converts Andrej Karpathy's llama2.c checkpoints (a "version 0"
// model.bin and a tokenizer.bin) into a Hugging Face model folder that the
// weights package loads: model.safetensors, config.json,
// generation_config.json, tokenizer.json and tokenizer_config.json.
package llama2c

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrFormat: a model.bin or tokenizer.bin that breaks the llama2.c layout.
var ErrFormat = errors.New("llama2c: bad file")

// HeaderSize is the size of model.bin's header: seven int32.
const HeaderSize = 7 * 4

// ModelConfig is the header of a llama2.c model.bin.
type ModelConfig struct {
	Dim       int // transformer width
	HiddenDim int // SwiGLU width
	NLayers   int
	NHeads    int
	NKVHeads  int
	Vocab     int  // |vocab_size| as stored
	SeqLen    int  // maximum sequence length
	Shared    bool // vocab_size was positive: the classifier is the token embedding
}

// HeadSize is Dim / NHeads.
func (c ModelConfig) HeadSize() int { return c.Dim / c.NHeads }

// KVDim is the width of the key and value projections.
func (c ModelConfig) KVDim() int { return c.Dim * c.NKVHeads / c.NHeads }

// ParseModelConfig reads the 28-byte header and checks that the sizes are
// positive, the heads divide evenly and the head size is even.
func ParseModelConfig(hdr []byte) (ModelConfig, error) {
	if len(hdr) < HeaderSize {
		return ModelConfig{}, fmt.Errorf("%w: model.bin header needs %d bytes, got %d", ErrFormat, HeaderSize, len(hdr))
	}
	v := make([]int, 7)
	for i := range v {
		v[i] = int(int32(binary.LittleEndian.Uint32(hdr[4*i:])))
	}
	c := ModelConfig{Dim: v[0], HiddenDim: v[1], NLayers: v[2], NHeads: v[3], NKVHeads: v[4], Vocab: v[5], SeqLen: v[6], Shared: v[5] > 0}
	if c.Vocab < 0 {
		c.Vocab = -c.Vocab
	}
	// Limits keep every size product far from overflow.
	limits := []int{1 << 20, 1 << 20, 1 << 12, 1 << 20, 1 << 20, 1 << 22, 1 << 22}
	for i, name := range []string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"} {
		x, limit := []int{c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.Vocab, c.SeqLen}[i], limits[i]
		if x <= 0 || x > limit {
			return ModelConfig{}, fmt.Errorf("%w: model.bin %s = %d, want 1..%d", ErrFormat, name, v[i], limit)
		}
	}
	if c.Dim%c.NHeads != 0 || c.NHeads%c.NKVHeads != 0 || c.HeadSize()%2 != 0 {
		return ModelConfig{}, fmt.Errorf("%w: model.bin dim %d, n_heads %d, n_kv_heads %d: heads must divide evenly into an even head size",
			ErrFormat, c.Dim, c.NHeads, c.NKVHeads)
	}
	return c, nil
}

// ReadModelConfig reads the header of the model.bin at path.
func ReadModelConfig(path string) (ModelConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return ModelConfig{}, err
	}
	defer f.Close()
	hdr := make([]byte, HeaderSize)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return ModelConfig{}, fmt.Errorf("%s: %w: header: %v", path, ErrFormat, err)
	}
	c, err := ParseModelConfig(hdr)
	if err != nil {
		return ModelConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// FileSize is the exact size of a model.bin with this header, in bytes.
func (c ModelConfig) FileSize() int64 {
	var n int64
	for _, s := range c.sections() {
		n += int64(s.floats)
	}
	return HeaderSize + 4*n
}

// section is one tensor of model.bin, in file order.
type section struct {
	name   string // "" for the RoPE tables, which are skipped
	floats int
}

func (c ModelConfig) sections() []section {
	L, d, kv, h := c.NLayers, c.Dim, c.KVDim(), c.HiddenDim
	s := []section{
		{"token_embedding", c.Vocab * d},
		{"rms_att", L * d},
		{"wq", L * d * d},
		{"wk", L * kv * d},
		{"wv", L * kv * d},
		{"wo", L * d * d},
		{"rms_ffn", L * d},
		{"w1", L * h * d},
		{"w2", L * d * h},
		{"w3", L * h * d},
		{"rms_final", d},
		{"", c.SeqLen * c.HeadSize() / 2}, // freq_cis_real
		{"", c.SeqLen * c.HeadSize() / 2}, // freq_cis_imag
	}
	if !c.Shared {
		s = append(s, section{"wcls", c.Vocab * d})
	}
	return s
}

// readSections reads model.bin's tensors as raw little-endian float32 bytes,
// by section name. The file must be exactly FileSize() bytes.
func readSections(path string) (ModelConfig, map[string][]byte, error) {
	c, err := ReadModelConfig(path)
	if err != nil {
		return c, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return c, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return c, nil, err
	}
	if fi.Size() != c.FileSize() {
		return c, nil, fmt.Errorf("%s: %w: %d bytes, but the header %+v needs %d", path, ErrFormat, fi.Size(), c, c.FileSize())
	}
	if _, err := f.Seek(HeaderSize, io.SeekStart); err != nil {
		return c, nil, err
	}
	out := map[string][]byte{}
	for _, s := range c.sections() {
		if s.name == "" {
			if _, err := f.Seek(int64(4*s.floats), io.SeekCurrent); err != nil {
				return c, nil, err
			}
			continue
		}
		b := make([]byte, 4*s.floats)
		if _, err := io.ReadFull(f, b); err != nil {
			return c, nil, fmt.Errorf("%s: %w: reading %s: %v", path, ErrFormat, s.name, err)
		}
		out[s.name] = b
	}
	return c, out, nil
}
