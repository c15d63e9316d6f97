// Package gguf reads and writes GGUF files (llama.cpp's model format, versions 2 and 3): a
// header of typed key-value metadata and tensor descriptions, then the tensors' data, each at an
// aligned offset. It knows the file format only; what the keys and tensors mean for a model is
// the business of the packages that use it.
package gguf

import (
	"errors"
	"fmt"
	"reflect"
)

// Magic is the file's first four bytes.
const Magic = "GGUF"

// DefaultAlignment is the tensors' alignment when general.alignment is absent.
const DefaultAlignment = 32

// ValueType is a metadata value's type.
type ValueType uint32

// Metadata value types (gguf.h's gguf_type).
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

var valueSizes = map[ValueType]int{
	TypeUint8: 1, TypeInt8: 1, TypeUint16: 2, TypeInt16: 2, TypeUint32: 4, TypeInt32: 4,
	TypeFloat32: 4, TypeBool: 1, TypeUint64: 8, TypeInt64: 8, TypeFloat64: 8,
}

// TensorType is a tensor's element type (ggml_type).
type TensorType uint32

// Tensor types (ggml.h's ggml_type; the numbers are the file's).
const (
	F32  TensorType = 0
	F16  TensorType = 1
	Q4_0 TensorType = 2
	Q4_1 TensorType = 3
	Q5_0 TensorType = 6
	Q5_1 TensorType = 7
	Q8_0 TensorType = 8
	Q4_K TensorType = 12
	Q5_K TensorType = 13
	Q6_K TensorType = 14
	BF16 TensorType = 30
)

// blockShape is a type's elements per block and bytes per block.
var blockShape = map[TensorType][2]int{
	F32: {1, 4}, F16: {1, 2}, BF16: {1, 2},
	Q4_0: {32, 18}, Q4_1: {32, 20}, Q5_0: {32, 22}, Q5_1: {32, 24}, Q8_0: {32, 34},
	Q4_K: {256, 144}, Q5_K: {256, 176}, Q6_K: {256, 210},
}

var typeNames = map[TensorType]string{
	F32: "F32", F16: "F16", BF16: "BF16", Q4_0: "Q4_0", Q4_1: "Q4_1", Q5_0: "Q5_0", Q5_1: "Q5_1",
	Q8_0: "Q8_0", Q4_K: "Q4_K", Q5_K: "Q5_K", Q6_K: "Q6_K",
}

func (t TensorType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("ggml type %d", uint32(t))
}

// BlockSize is the type's elements per block (0 for a type this package does not know).
func (t TensorType) BlockSize() int { return blockShape[t][0] }

// RowBytes is the bytes of n elements of type t, or an error when t is unknown or n is not
// whole blocks.
func (t TensorType) RowBytes(n uint64) (uint64, error) {
	bs, ok := blockShape[t]
	if !ok {
		return 0, fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	if n%uint64(bs[0]) != 0 {
		return 0, fmt.Errorf("%w: %d elements of %v are not whole blocks of %d", ErrMalformed, n, t, bs[0])
	}
	return n / uint64(bs[0]) * uint64(bs[1]), nil
}

// Errors a malformed or unsupported file is reported with (wrapped with the details).
var (
	ErrMalformed   = errors.New("gguf: malformed file")
	ErrUnknownType = errors.New("gguf: unknown tensor type")
)

// KV is one metadata entry. Value is one of uint8, int8, uint16, int16, uint32, int32, float32,
// bool, string, uint64, int64, float64, or an Array.
type KV struct {
	Key   string
	Value any
}

// Array is a metadata array. One built to be written holds its elements in Values, as []T for
// the element type's Go type (e.g. []string, []int32, []float32). One Parse read holds its
// element count and bytes (a slice of the file) and decodes them only when Elements asks, so
// an array nobody reads costs no memory, and a reader can bound Len before it decodes.
type Array struct {
	Type   ValueType
	Values any
	n      int    // a parsed array's element count
	raw    []byte // a parsed array's element bytes
}

// Len is the array's element count.
func (a Array) Len() int {
	if a.Values != nil {
		return reflect.ValueOf(a.Values).Len()
	}
	return a.n
}

// Elements is the array's elements as []T of the element type's Go type: Values, or the
// parsed bytes decoded (afresh on each call).
func (a Array) Elements() any {
	if a.Values != nil {
		return a.Values
	}
	d := &decoder{b: a.raw}
	return decodeElements(d, a.Type, a.n)
}

// TensorInfo describes a tensor of the file. Dims are ggml's ne: the innermost (contiguous)
// dimension first, so a PyTorch [out, in] matrix has Dims [in, out].
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   TensorType
	Offset uint64 // from the start of the data section
	Size   uint64 // bytes
}

// Elements is the tensor's element count.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}
