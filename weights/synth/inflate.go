package synth

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/wspec/wspec/weights"
)

// Size is an inflated model's size: hidden size, attention heads (of the small model's head
// size), MLP width and layers. Each is at least the small model's.
type Size struct {
	Hidden, Heads, Intermediate, Layers int
}

// ErrInflate: a size the model cannot be inflated to, or a model this inflation does not
// cover.
var ErrInflate = errors.New("synth: cannot inflate")

// Inflate makes a larger model that computes the same function as a small one: a source of
// its tensors, read from small's on demand, and its config. Padding keeps every sum the same:
//   - the hidden size grows with zero columns in the embedding, the LM head and every matrix
//     that reads the residual stream, and zero rows in those that write it (o_proj,
//     down_proj), so the stream's new entries start at 0 and stay 0;
//   - RMSNorm, which averages over the hidden size, is kept exact by scaling its weights by
//     sqrt(H/H') and its eps by H/H';
//   - new heads (of the same head size, so rope and the attention scale are unchanged, and
//     the same query heads per KV head) have zero q/k/v rows and zero o_proj columns: they
//     attend to zero values and add nothing;
//   - the MLP grows with zero gate/up rows and zero down_proj columns (silu(0) * 0 = 0);
//   - new layers have zero o_proj and down_proj, so each adds exactly 0 to the stream.
//
// The result's greedy text is the small model's; its step reads as many bytes as a real model
// of its size. Llama-family models without biases or q/k norms only (llama, mistral).
func Inflate(small weights.Config, src weights.TensorSource, size Size) (weights.Config, weights.TensorSource, error) {
	c := small
	switch {
	case c.Arch != "llama" && c.Arch != "mistral":
		return c, nil, fmt.Errorf("%w: architecture %q (llama or mistral only)", ErrInflate, c.Arch)
	case c.AttnBias || c.QKNorm || c.NormPlusOne || c.PostNorms:
		return c, nil, fmt.Errorf("%w: attention biases, q/k norms or Gemma's norms", ErrInflate)
	case size.Hidden < c.Dim || size.Heads < c.NHeads || size.Intermediate < c.HiddenDim || size.Layers < c.NLayers:
		return c, nil, fmt.Errorf("%w: %+v is smaller than the model (hidden %d, heads %d, intermediate %d, layers %d)",
			ErrInflate, size, c.Dim, c.NHeads, c.HiddenDim, c.NLayers)
	case c.NHeads%c.NKVHeads != 0 || size.Heads%(c.NHeads/c.NKVHeads) != 0:
		return c, nil, fmt.Errorf("%w: %d heads do not keep %d query heads per KV head", ErrInflate, size.Heads, c.NHeads/c.NKVHeads)
	}
	c.Dim, c.NHeads, c.HiddenDim, c.NLayers = size.Hidden, size.Heads, size.Intermediate, size.Layers
	c.NKVHeads = size.Heads / (small.NHeads / small.NKVHeads)
	c.RMSEps = small.RMSEps * float64(small.Dim) / float64(size.Hidden)
	if c.SlidingLayers != nil {
		c.SlidingLayers = append(append([]bool(nil), small.SlidingLayers...), make([]bool, size.Layers-small.NLayers)...)
	}
	return c, &inflated{small: small, big: c, src: src, scale: float32(math.Sqrt(float64(small.Dim) / float64(size.Hidden)))}, nil
}

// inflated is Inflate's tensor source.
type inflated struct {
	small, big weights.Config
	src        weights.TensorSource
	scale      float32 // sqrt(H/H'): the norms' factor
}

// layout says how a tensor of the inflated model is made of the small one's: its shape, and
// the small tensor's rows and columns (copied to the same places; the rest is 0). A norm
// (a vector) is scaled; a new layer's tensors are all zero but its norms.
type layout struct {
	rows, cols           int
	smallRows, smallCols int
	norm                 bool
	fresh                bool // a new layer's: nothing to read
}

func (s *inflated) layout(name string) (layout, error) {
	sm, bg := s.small, s.big
	hd := sm.HeadDim
	switch name {
	case weights.EmbedTensorName, weights.LMHeadTensorName:
		return layout{sm.Vocab, bg.Dim, sm.Vocab, sm.Dim, false, false}, nil
	case weights.NormTensorName:
		return layout{1, bg.Dim, 1, sm.Dim, true, false}, nil
	}
	var layer int
	var suffix string
	if _, err := fmt.Sscanf(name, "model.layers.%d.", &layer); err != nil {
		return layout{}, fmt.Errorf("%w: no tensor %q", ErrInflate, name)
	}
	suffix = strings.TrimPrefix(name, fmt.Sprintf("model.layers.%d.", layer))
	if layer < 0 || layer >= bg.NLayers {
		return layout{}, fmt.Errorf("%w: no tensor %q", ErrInflate, name)
	}
	var l layout
	switch suffix {
	case weights.AttnNormSuffix, weights.FFNNormSuffix:
		l = layout{1, bg.Dim, 1, sm.Dim, true, false}
	case weights.WqSuffix:
		l = layout{bg.NHeads * hd, bg.Dim, sm.NHeads * hd, sm.Dim, false, false}
	case weights.WkSuffix, weights.WvSuffix:
		l = layout{bg.NKVHeads * hd, bg.Dim, sm.NKVHeads * hd, sm.Dim, false, false}
	case weights.WoSuffix:
		l = layout{bg.Dim, bg.NHeads * hd, sm.Dim, sm.NHeads * hd, false, false}
	case weights.GateSuffix, weights.UpSuffix:
		l = layout{bg.HiddenDim, bg.Dim, sm.HiddenDim, sm.Dim, false, false}
	case weights.DownSuffix:
		l = layout{bg.Dim, bg.HiddenDim, sm.Dim, sm.HiddenDim, false, false}
	default:
		return layout{}, fmt.Errorf("%w: no tensor %q", ErrInflate, name)
	}
	l.fresh = layer >= sm.NLayers
	return l, nil
}

// Shape is the inflated tensor's rows and columns (and its bytes in float32).
func (s *inflated) Shape(name string) (int, int, int64, error) {
	l, err := s.layout(name)
	if err != nil {
		return 0, 0, 0, err
	}
	return l.rows, l.cols, 4 * int64(l.rows) * int64(l.cols), nil
}

// Rows writes rows row0.. of the inflated tensor into dst.
func (s *inflated) Rows(name string, row0 int, dst []float32) error {
	l, err := s.layout(name)
	if err != nil {
		return err
	}
	n := len(dst) / l.cols
	if len(dst)%l.cols != 0 || row0 < 0 || row0+n > l.rows {
		return fmt.Errorf("%w: rows %d..%d of %q (%d x %d)", ErrInflate, row0, row0+n, name, l.rows, l.cols)
	}
	clear(dst)
	if l.fresh {
		if l.norm {
			for i := range l.smallCols {
				dst[i] = s.scale // a new layer's norm: any value; its output is multiplied by zeros
			}
		}
		return nil
	}
	have := min(row0+n, l.smallRows) - row0 // rows read from the small tensor
	if have <= 0 {
		return nil
	}
	buf := make([]float32, have*l.smallCols)
	if err := s.src.Rows(name, row0, buf); err != nil {
		return err
	}
	for r := range have {
		row := dst[r*l.cols : r*l.cols+l.smallCols]
		copy(row, buf[r*l.smallCols:(r+1)*l.smallCols])
		if l.norm {
			for i := range row {
				row[i] *= s.scale
			}
		}
	}
	return nil
}

// WriteInflated inflates the Hugging Face folder small to size and writes the result into
// dir (which must not exist) in o.DType: config.json, the safetensors shards with their index,
// and small's tokenizer and generation files as they are.
func WriteInflated(dir, small string, size Size, o Options) error {
	if o.DType == "" {
		o.DType = weights.F16
	}
	if o.ShardBytes <= 0 {
		o.ShardBytes = 1 << 30
	}
	w, err := weights.OpenWeights(small)
	if err != nil {
		return err
	}
	defer w.Close()
	if w.GGUF {
		return fmt.Errorf("%w: %s is a GGUF file (a Hugging Face folder only)", ErrInflate, small)
	}
	cfg, src, err := Inflate(*w.Config, w.Source, size)
	if err != nil {
		return err
	}
	return weights.WriteFolder(dir, false, func(tmp string) error {
		if err := weights.WriteConfig(tmp, &cfg); err != nil {
			return err
		}
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
			b, err := os.ReadFile(filepath.Join(small, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				return err
			}
		}
		return writeShards(tmp, cfg, o, func(sp weights.TensorSpec, n int) ([]float32, error) {
			v := make([]float32, n)
			return v, src.Rows(sp.Name, 0, v)
		})
	})
}
