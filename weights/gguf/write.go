package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Tensor is a tensor to write: its description and a function that writes exactly its bytes
// (Type's row bytes of its elements), called once, in file order, so that a model need not
// be in memory.
type Tensor struct {
	Name  string
	Dims  []uint64 // ggml's ne, innermost first
	Type  TensorType
	Write func(w io.Writer) error
}

// Bytes is a Tensor.Write that writes b.
func Bytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

// WriteFile writes a GGUF v3 file at path, which must not exist: the metadata, the tensor
// descriptions, then each tensor's data at an offset aligned to DefaultAlignment. It writes a
// temporary file beside path and renames it, so a failure leaves nothing at path.
func WriteFile(path string, kvs []KV, tensors []Tensor) (err error) {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("gguf: %s already exists", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if err = Write(w, kvs, tensors); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil { // CreateTemp's 0600 is for the temporary name only
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Write writes a GGUF v3 stream (see WriteFile).
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	e := &encoder{w: w}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		if err := e.value(kv.Value, true); err != nil {
			return fmt.Errorf("gguf: key %s: %w", kv.Key, err)
		}
	}
	var off uint64
	sizes := make([]uint64, len(tensors))
	for i, t := range tensors {
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		size, err := t.Type.RowBytes(n)
		if err != nil {
			return fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
		}
		sizes[i] = size
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(off)
		off = align(off+size, DefaultAlignment)
	}
	e.pad()
	for i, t := range tensors {
		if e.err != nil {
			return e.err
		}
		cw := &countingWriter{w: w}
		if err := t.Write(cw); err != nil {
			return fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
		}
		if cw.n != sizes[i] {
			return fmt.Errorf("gguf: tensor %s: wrote %d bytes, its shape and type take %d", t.Name, cw.n, sizes[i])
		}
		e.n += cw.n
		if i < len(tensors)-1 {
			e.pad()
		}
	}
	return e.err
}

func align(n, a uint64) uint64 { return (n + a - 1) / a * a }

type countingWriter struct {
	w io.Writer
	n uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

// encoder writes little-endian values and keeps the first error and the bytes written.
type encoder struct {
	w   io.Writer
	n   uint64
	err error
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.n += uint64(len(b))
	}
}

func (e *encoder) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *encoder) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

// pad writes zeros up to the next multiple of DefaultAlignment.
func (e *encoder) pad() { e.raw(make([]byte, align(e.n, DefaultAlignment)-e.n)) }

// value writes v with its type tag (typed: at the top level) or without (array elements).
func (e *encoder) value(v any, typed bool) error {
	tag := func(t ValueType) {
		if typed {
			e.u32(uint32(t))
		}
	}
	switch x := v.(type) {
	case uint8:
		tag(TypeUint8)
		e.raw([]byte{x})
	case int8:
		tag(TypeInt8)
		e.raw([]byte{byte(x)})
	case uint16:
		tag(TypeUint16)
		e.raw(binary.LittleEndian.AppendUint16(nil, x))
	case int16:
		tag(TypeInt16)
		e.raw(binary.LittleEndian.AppendUint16(nil, uint16(x)))
	case uint32:
		tag(TypeUint32)
		e.u32(x)
	case int32:
		tag(TypeInt32)
		e.u32(uint32(x))
	case float32:
		tag(TypeFloat32)
		e.u32(math.Float32bits(x))
	case bool:
		tag(TypeBool)
		e.raw([]byte{map[bool]byte{false: 0, true: 1}[x]})
	case string:
		tag(TypeString)
		e.str(x)
	case uint64:
		tag(TypeUint64)
		e.u64(x)
	case int64:
		tag(TypeInt64)
		e.u64(uint64(x))
	case float64:
		tag(TypeFloat64)
		e.u64(math.Float64bits(x))
	case Array:
		tag(TypeArray)
		return e.array(x)
	default:
		return fmt.Errorf("a value of Go type %T", v)
	}
	return nil
}

func (e *encoder) array(a Array) error {
	e.u32(uint32(a.Type))
	want := func(t ValueType, n int) error {
		if a.Type != t {
			return fmt.Errorf("an array of %d holding elements of type %d", a.Type, t)
		}
		e.u64(uint64(n))
		return nil
	}
	switch vs := a.Elements().(type) {
	case []string:
		if err := want(TypeString, len(vs)); err != nil {
			return err
		}
		for _, v := range vs {
			e.str(v)
		}
	case []int32:
		if err := want(TypeInt32, len(vs)); err != nil {
			return err
		}
		e.raw(appendWords(vs, func(v int32) uint32 { return uint32(v) }))
	case []uint32:
		if err := want(TypeUint32, len(vs)); err != nil {
			return err
		}
		e.raw(appendWords(vs, func(v uint32) uint32 { return v }))
	case []float32:
		if err := want(TypeFloat32, len(vs)); err != nil {
			return err
		}
		e.raw(appendWords(vs, math.Float32bits))
	default:
		return fmt.Errorf("an array of Go type %T", a.Elements())
	}
	return nil
}

// appendWords is vs as little-endian 32-bit words.
func appendWords[T any](vs []T, bits func(T) uint32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, bits(v))
	}
	return b
}
