package weights

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/wspec/wspec/weights/half"
)

// DType is a safetensors element type, spelled as in the file header ("F32", "BF16", ...).
type DType string

// The element types this package knows. Only F32, F16 and BF16 convert to float32;
// the others can be read and written as raw bytes.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	F64  DType = "F64"
	I8   DType = "I8"
	I16  DType = "I16"
	I32  DType = "I32"
	I64  DType = "I64"
	U8   DType = "U8"
	U16  DType = "U16"
	U32  DType = "U32"
	U64  DType = "U64"
	Bool DType = "BOOL"
)

var dtypeSizes = map[DType]int{
	F32: 4, F16: 2, BF16: 2, F64: 8,
	I8: 1, I16: 2, I32: 4, I64: 8,
	U8: 1, U16: 2, U32: 4, U64: 8,
	Bool: 1,
}

// Size is the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// Known reports whether d is one of the dtypes above.
func (d DType) Known() bool { return dtypeSizes[d] != 0 }

// IsFloat reports whether d converts to float32 (F32, F16 or BF16).
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

// numElements is the product of shape, or an error for a negative dimension or
// a product that overflows.
func numElements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %v", d, shape)
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n *= d
	}
	return n, nil
}

// F16ToF32 converts IEEE 754 half-precision bits to float32 (exactly).
func F16ToF32(h uint16) float32 { return half.ToF32(h) }

// F32ToF16 converts a float32 to half-precision bits, rounding to nearest even.
// Values too large become ±Inf; NaN stays NaN.
func F32ToF16(f float32) uint16 { return half.FromF32(f) }

// BF16ToF32 converts bfloat16 bits to float32 (exactly).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 converts a float32 to bfloat16 bits, rounding to nearest even.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it a (quiet) NaN
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// Float32 converts the tensor's elements to float32. F32, F16 and BF16 are
// supported; other dtypes give ErrDType. Data must hold exactly
// product(Shape) elements, else ErrShape.
func (t Tensor) Float32() ([]float32, error) {
	n, err := t.checkSize()
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	default:
		return nil, fmt.Errorf("%w: tensor %q is %s, not a float type", ErrDType, t.Name, t.DType)
	}
	return out, nil
}

// Float16Bits returns the tensor's elements as IEEE half-precision bits, ready
// to upload as f16. F16 is returned as stored; F32 and BF16 are rounded to
// nearest even (BF16 values beyond the F16 range become ±Inf).
func (t Tensor) Float16Bits() ([]uint16, error) {
	n, err := t.checkSize()
	if err != nil {
		return nil, err
	}
	out := make([]uint16, n)
	switch t.DType {
	case F16:
		for i := range out {
			out[i] = binary.LittleEndian.Uint16(t.Data[2*i:])
		}
	case F32:
		for i := range out {
			out[i] = F32ToF16(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	case BF16:
		for i := range out {
			out[i] = F32ToF16(BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:])))
		}
	default:
		return nil, fmt.Errorf("%w: tensor %q is %s, not a float type", ErrDType, t.Name, t.DType)
	}
	return out, nil
}

// NumElements is the product of the tensor's shape (1 for a scalar), or an
// error when a dimension is negative or the product overflows.
func (t Tensor) NumElements() (int, error) {
	n, err := numElements(t.Shape)
	if err != nil {
		return 0, fmt.Errorf("%w: tensor %q: %v", ErrShape, t.Name, err)
	}
	return n, nil
}

// checkSize checks that the dtype is known and len(Data) == product(Shape)*size.
func (t Tensor) checkSize() (int, error) {
	size := t.DType.Size()
	if size == 0 {
		return 0, fmt.Errorf("%w: tensor %q has dtype %q", ErrDType, t.Name, t.DType)
	}
	n, err := t.NumElements()
	if err != nil {
		return 0, err
	}
	if n > len(t.Data)/size || n*size != len(t.Data) {
		return 0, fmt.Errorf("%w: tensor %q: shape %v of %s needs %d elements, data holds %d bytes",
			ErrShape, t.Name, t.Shape, t.DType, n, len(t.Data))
	}
	return n, nil
}

// F32Tensor makes an F32 tensor from data (copied). The writer checks that
// len(data) matches shape.
func F32Tensor(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{Name: name, DType: F32, Shape: append([]int(nil), shape...), Data: b}
}

// F16Tensor makes an F16 tensor from data, rounding each value to nearest even.
func F16Tensor(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 2*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint16(b[2*i:], F32ToF16(v))
	}
	return Tensor{Name: name, DType: F16, Shape: append([]int(nil), shape...), Data: b}
}

// BF16Tensor makes a BF16 tensor from data, rounding each value to nearest even.
func BF16Tensor(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 2*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint16(b[2*i:], F32ToBF16(v))
	}
	return Tensor{Name: name, DType: BF16, Shape: append([]int(nil), shape...), Data: b}
}
