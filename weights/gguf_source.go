package weights

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/quant"
)

// ggufSource serves a GGUF file's tensors under Hugging Face names, rows in Hugging Face's
// order and values as Hugging Face holds them.
type ggufSource struct {
	f      *gguf.File
	c      *Config
	mapped bool
}

var (
	_ HalfSource  = (*ggufSource)(nil)
	_ QuantSource = (*ggufSource)(nil)
)

// tensor is the GGUF tensor behind a Hugging Face name, its rows and columns.
func (s *ggufSource) tensor(name string) (gguf.TensorInfo, []byte, int, int, error) {
	g, ok := ggufName(s.c, name)
	if !ok {
		return gguf.TensorInfo{}, nil, 0, 0, fmt.Errorf("%w: %q has no GGUF name", ErrMissingTensor, name)
	}
	info, b, ok := s.f.Tensor(g)
	if !ok {
		return info, nil, 0, 0, fmt.Errorf("%w: %q (GGUF %s) not in the file", ErrMissingTensor, name, g)
	}
	switch info.Type {
	case gguf.F32, gguf.F16, gguf.BF16:
	default:
		if !quant.IsQuantized(info.Type) {
			return info, nil, 0, 0, fmt.Errorf("%w: tensor %s is %v (wspec reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K)", ErrUnsupported, g, info.Type)
		}
	}
	switch len(info.Dims) {
	case 1:
		return info, b, 1, int(info.Dims[0]), nil
	case 2:
		return info, b, int(info.Dims[1]), int(info.Dims[0]), nil
	}
	return info, nil, 0, 0, fmt.Errorf("%w: tensor %s has %d dimensions", ErrShape, g, len(info.Dims))
}

// StoredType is how a tensor is stored in the file.
func (s *ggufSource) StoredType(name string) (gguf.TensorType, error) {
	info, _, _, _, err := s.tensor(name)
	return info.Type, err
}

// RawRows copies rows row0 .. of a tensor as stored (whole rows of blocks) into dst, in
// Hugging Face's row order. Norm weights are not raw rows (Gemma's are shifted).
func (s *ggufSource) RawRows(name string, row0 int, dst []byte) error {
	info, _, _, cols, err := s.tensor(name)
	if err != nil {
		return err
	}
	rb, err := info.Type.RowBytes(uint64(cols))
	if err != nil || rb == 0 || len(dst)%int(rb) != 0 {
		return fmt.Errorf("%w: %d bytes are not whole rows of tensor %q (%d bytes a row)", ErrShape, len(dst), name, rb)
	}
	at := 0
	return s.read(name, row0, len(dst)/int(rb)*cols, func(_ int, src []byte, _ gguf.TensorType, _ int) error {
		at += copy(dst[at:], src)
		return nil
	})
}

// Shape is a tensor's rows, columns and stored bytes.
func (s *ggufSource) Shape(name string) (int, int, int64, error) {
	info, _, rows, cols, err := s.tensor(name)
	return rows, cols, int64(info.Size), err
}

// permutedHeads is the head count of a tensor whose rows llama.cpp's converter permuted for its
// rope (llama's q and k, weights and biases), 0 for the others.
func (s *ggufSource) permutedHeads(name string) int {
	if s.c.Arch != "llama" && s.c.Arch != "mistral" {
		return 0
	}
	switch {
	case strings.HasSuffix(name, WqSuffix) || strings.HasSuffix(name, BqSuffix):
		return s.c.NHeads
	case strings.HasSuffix(name, WkSuffix) || strings.HasSuffix(name, BkSuffix):
		return s.c.NKVHeads
	}
	return 0
}

// fileRow is the row of the file that holds Hugging Face row r of a tensor permuted over heads
// (row j of a head's first half was written at 2j, of its second half at 2j + 1).
func fileRow(r, rows, heads int) int {
	if heads == 0 {
		return r
	}
	hd := rows / heads
	h, j := r/hd, r%hd
	if j < hd/2 {
		return h*hd + 2*j
	}
	return h*hd + 2*(j-hd/2) + 1
}

// read gives rows row0 .. row0 + n/cols of a tensor, in Hugging Face's row order, to put(i,
// the row's stored bytes, type, cols) with i the row's first value in the destination.
func (s *ggufSource) read(name string, row0, n int, put func(dst int, src []byte, t gguf.TensorType, k int) error) error {
	info, b, rows, cols, err := s.tensor(name)
	if err != nil {
		return err
	}
	if row0 < 0 || n%max(cols, 1) != 0 || row0+n/max(cols, 1) > rows {
		return fmt.Errorf("%w: rows %d.. (%d values) of tensor %q [%d, %d]", ErrShape, row0, n, name, rows, cols)
	}
	heads := s.permutedHeads(name)
	if rows == 1 && heads > 0 { // a bias: its values are the permuted rows
		if quant.IsQuantized(info.Type) {
			return fmt.Errorf("%w: tensor %q is a quantized vector", ErrUnsupported, name)
		}
		rows, cols = cols, 1
	}
	rb64, err := info.Type.RowBytes(uint64(cols))
	if err != nil {
		return fmt.Errorf("tensor %q: %w", name, err)
	}
	rb, nr := int(rb64), n/cols
	for r := 0; r < nr; r++ {
		fr := fileRow(row0+r, rows, heads)
		if err := put(r*cols, b[fr*rb:(fr+1)*rb], info.Type, cols); err != nil {
			return fmt.Errorf("tensor %q: %w", name, err)
		}
	}
	if s.mapped {
		dropPages(b[row0*rb : (row0+nr)*rb])
	}
	return nil
}

// normShift is what a GGUF file adds to a norm weight of this tensor: Gemma's 1.
func (s *ggufSource) normShift(name string) float32 {
	if s.c.NormPlusOne && strings.HasSuffix(name, "norm.weight") {
		return 1
	}
	return 0
}

// Rows reads rows of a tensor as float32, as Hugging Face holds them.
func (s *ggufSource) Rows(name string, row0 int, dst []float32) error {
	shift := s.normShift(name)
	return s.read(name, row0, len(dst), func(i int, src []byte, t gguf.TensorType, k int) error {
		if quant.IsQuantized(t) {
			return quant.Dequantize(t, src, dst[i:i+k])
		}
		for j := range k {
			dst[i+j] = decodeFloat(src, j, t) - shift
		}
		return nil
	})
}

// HalfRows reads rows of a tensor as f16 bits: F16 copied, the others (quantized ones decoded)
// rounded.
func (s *ggufSource) HalfRows(name string, row0 int, dst []byte) error {
	shift := s.normShift(name)
	var row []float32
	return s.read(name, row0, len(dst)/2, func(i int, src []byte, t gguf.TensorType, k int) error {
		d := dst[2*i : 2*(i+k)]
		if quant.IsQuantized(t) {
			row = append(row[:0], make([]float32, k)...)
			if err := quant.Dequantize(t, src, row); err != nil {
				return err
			}
			for j, v := range row {
				binary.LittleEndian.PutUint16(d[2*j:], F32ToF16(v))
			}
			return nil
		}
		if t == gguf.F16 && shift == 0 { // the bits as they are
			copy(d, src[:2*k])
			return nil
		}
		for j := range k {
			binary.LittleEndian.PutUint16(d[2*j:], F32ToF16(decodeFloat(src, j, t)-shift))
		}
		return nil
	})
}

// decodeFloat is value j of src, a run of type t.
func decodeFloat(src []byte, j int, t gguf.TensorType) float32 {
	switch t {
	case gguf.F16:
		return F16ToF32(binary.LittleEndian.Uint16(src[2*j:]))
	case gguf.BF16:
		return BF16ToF32(binary.LittleEndian.Uint16(src[2*j:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(src[4*j:]))
}

// decodeFloats decodes a whole F32, F16 or BF16 tensor.
func decodeFloats(info gguf.TensorInfo, b []byte, out []float32) error {
	switch info.Type {
	case gguf.F32, gguf.F16, gguf.BF16:
	default:
		return fmt.Errorf("%w: tensor %s is %v", ErrUnsupported, info.Name, info.Type)
	}
	for j := range out {
		out[j] = decodeFloat(b, j, info.Type)
	}
	return nil
}

// checkSource checks that src holds every tensor of ExpectedTensors with its shape.
func (c *Config) checkSource(src TensorSource) error {
	for _, spec := range c.ExpectedTensors() {
		rows, cols, _, err := src.Shape(spec.Name)
		if err != nil {
			return err
		}
		want := [2]int{1, spec.Shape[0]}
		if len(spec.Shape) == 2 {
			want = [2]int{spec.Shape[0], spec.Shape[1]}
		}
		if rows != want[0] || cols != want[1] {
			return fmt.Errorf("%w: %q is [%d, %d], want %v", ErrShape, spec.Name, rows, cols, spec.Shape)
		}
	}
	return nil
}
