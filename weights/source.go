package weights

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/wspec/wspec/weights/gguf"
)

// TensorSource gives a model's tensors a bounded chunk of rows at a time, as float32, so that
// a model goes to the device without a whole copy of it in host memory. A tensor of shape
// [rows, cols] has rows rows of cols elements; a vector [n] is one row of n.
type TensorSource interface {
	// Shape is the tensor's rows and columns, and the bytes it takes where it is stored.
	Shape(name string) (rows, cols int, bytes int64, err error)
	// Rows reads rows row0 .. row0 + len(dst)/cols of the tensor into dst.
	Rows(name string, row0 int, dst []float32) error
}

var (
	_ TensorSource = (*Checkpoint)(nil)
	_ TensorSource = (*LlamaWeights)(nil)
)

// Shape is a checkpoint tensor's rows, columns and stored bytes.
func (c *Checkpoint) Shape(name string) (int, int, int64, error) {
	t, err := c.Tensor(name)
	if err != nil {
		return 0, 0, 0, err
	}
	rows, cols, err := rowsCols(t)
	return rows, cols, int64(len(t.Data)), err
}

// Rows converts rows of a checkpoint tensor (F32, F16 or BF16) to float32. The file pages it
// read are handed back to the system (a mapped file's pages would otherwise stay resident
// beside the device's copy).
func (c *Checkpoint) Rows(name string, row0 int, dst []float32) error {
	data, dt, err := c.rowBytes(name, row0, len(dst))
	if err != nil {
		return err
	}
	switch dt {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	}
	c.dropRead(name, data)
	return nil
}

// QuantSource is a TensorSource whose matrices may be stored block-quantized (a GGUF file's),
// for a device that keeps them as stored.
type QuantSource interface {
	TensorSource
	// StoredType is how tensor name is stored (F32, F16, BF16 or a quantized type).
	StoredType(name string) (gguf.TensorType, error)
	// RawRows copies rows row0 .. row0 + len(dst)/row bytes of a tensor as stored.
	RawRows(name string, row0 int, dst []byte) error
}

// HalfSource is a TensorSource that also gives rows as IEEE half-precision bits, for a device
// that stores weights in f16: F16 storage goes as it is, without a float32 round trip.
type HalfSource interface {
	TensorSource
	// HalfRows reads rows row0 .. of a tensor into dst as f16 bits, two little-endian bytes a
	// value (len(dst)/2 values: whole rows).
	HalfRows(name string, row0 int, dst []byte) error
}

var _ HalfSource = (*Checkpoint)(nil)

// HalfRows reads rows of a checkpoint tensor as f16 bits: F16 copied, BF16 and F32 rounded.
func (c *Checkpoint) HalfRows(name string, row0 int, dst []byte) error {
	n := len(dst) / 2
	data, dt, err := c.rowBytes(name, row0, n)
	if err != nil {
		return err
	}
	switch dt {
	case F16:
		copy(dst, data[:2*n])
	case BF16:
		for i := range n {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(BF16ToF32(binary.LittleEndian.Uint16(data[2*i:]))))
		}
	case F32:
		for i := range n {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))))
		}
	}
	c.dropRead(name, data)
	return nil
}

// rowBytes is the stored bytes of n values from row row0 of a float tensor, and its type.
func (c *Checkpoint) rowBytes(name string, row0, n int) ([]byte, DType, error) {
	t, err := c.Tensor(name)
	if err != nil {
		return nil, "", err
	}
	rows, cols, err := rowsCols(t)
	if err != nil {
		return nil, "", err
	}
	if !t.DType.IsFloat() {
		return nil, "", fmt.Errorf("%w: tensor %q is %s, not a float type", ErrDType, name, t.DType)
	}
	nr := n / max(cols, 1)
	if row0 < 0 || n%max(cols, 1) != 0 || row0+nr > rows {
		return nil, "", fmt.Errorf("%w: rows %d..%d of tensor %q [%d, %d]", ErrShape, row0, row0+nr, name, rows, cols)
	}
	size := t.DType.Size()
	return t.Data[row0*cols*size : (row0+nr)*cols*size], t.DType, nil
}

// dropRead hands the pages of data, read from tensor name, back to the system when the
// tensor's file is mapped.
func (c *Checkpoint) dropRead(name string, data []byte) {
	if c.where[name].mapped {
		dropPages(data)
	}
}

// rowsCols is a tensor's shape as rows and columns, its data checked against it.
func rowsCols(t Tensor) (int, int, error) {
	if _, err := t.checkSize(); err != nil {
		return 0, 0, err
	}
	switch len(t.Shape) {
	case 1:
		return 1, t.Shape[0], nil
	case 2:
		return t.Shape[0], t.Shape[1], nil
	}
	return 0, 0, fmt.Errorf("%w: tensor %q has shape %v, want a matrix or a vector", ErrShape, t.Name, t.Shape)
}

// Shape is a host tensor's rows, columns and bytes (float32).
func (w *LlamaWeights) Shape(name string) (int, int, int64, error) {
	v, rows, cols, err := w.tensor(name)
	return rows, cols, int64(4 * len(v)), err
}

// Rows copies rows of a host tensor.
func (w *LlamaWeights) Rows(name string, row0 int, dst []float32) error {
	v, rows, cols, err := w.tensor(name)
	if err != nil {
		return err
	}
	if n := len(dst) / max(cols, 1); row0 < 0 || len(dst)%max(cols, 1) != 0 || row0+n > rows {
		return fmt.Errorf("%w: rows %d..%d of tensor %q [%d, %d]", ErrShape, row0, row0+n, name, rows, cols)
	}
	copy(dst, v[row0*cols:])
	return nil
}

// tensor finds a host tensor by its Hugging Face name.
func (w *LlamaWeights) tensor(name string) ([]float32, int, int, error) {
	c := w.Cfg
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	switch name {
	case EmbedTensorName:
		return w.Embed, c.Vocab, c.Dim, nil
	case NormTensorName:
		return w.Norm, 1, c.Dim, nil
	case LMHeadTensorName:
		return w.LMHead, c.Vocab, c.Dim, nil
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		for _, t := range []struct {
			suffix     string
			v          []float32
			rows, cols int
		}{
			{AttnNormSuffix, l.AttnNorm, 1, c.Dim}, {c.FFNNormSuffix(), l.FFNNorm, 1, c.Dim},
			{PostAttnNormSuffix, l.PostAttn, 1, c.Dim}, {PostFFNNormSuffix, l.PostFFN, 1, c.Dim},
			{WqSuffix, l.Wq, q, c.Dim}, {WkSuffix, l.Wk, kv, c.Dim}, {WvSuffix, l.Wv, kv, c.Dim}, {WoSuffix, l.Wo, c.Dim, q},
			{BqSuffix, l.Bq, 1, q}, {BkSuffix, l.Bk, 1, kv}, {BvSuffix, l.Bv, 1, kv},
			{QNormSuffix, l.QNorm, 1, c.HeadDim}, {KNormSuffix, l.KNorm, 1, c.HeadDim},
			{GateSuffix, l.WGate, c.HiddenDim, c.Dim}, {UpSuffix, l.WUp, c.HiddenDim, c.Dim}, {DownSuffix, l.WDown, c.Dim, c.HiddenDim},
		} {
			if name == LayerTensorName(i, t.suffix) && t.v != nil {
				if len(t.v) != t.rows*t.cols {
					return nil, 0, 0, fmt.Errorf("%w: host tensor %q has %d values, want %d x %d", ErrShape, name, len(t.v), t.rows, t.cols)
				}
				return t.v, t.rows, t.cols, nil
			}
		}
	}
	return nil, 0, 0, fmt.Errorf("%w: %q", ErrMissingTensor, name)
}
