package gguf

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// File is a parsed GGUF file: its metadata in file order, its tensors, and their data (slices
// of the bytes Parse was given).
type File struct {
	Version   uint32
	KV        []KV
	Tensors   []TensorInfo
	Alignment uint64
	keys      map[string]int
	tensors   map[string]int
	data      []byte // the data section
}

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// Parse reads the header of a GGUF file held in b (typically memory-mapped) and checks every
// count, length, type, offset and size against b before it allocates or slices by them: a
// truncated or lying file is an error wrapping ErrMalformed (or ErrUnknownType), never a read
// past b or an allocation its header asks for.
func Parse(b []byte) (*File, error) {
	d := &decoder{b: b}
	if len(b) < 4 || string(b[:4]) != Magic {
		return nil, fmt.Errorf("%w: not a GGUF file (no %q magic)", ErrMalformed, Magic)
	}
	d.off = 4
	f := &File{Version: d.u32(), keys: map[string]int{}, tensors: map[string]int{}}
	if d.err == nil && f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("%w: version %d (want 2 or 3)", ErrMalformed, f.Version)
	}
	nTensors, nKV := d.u64(), d.u64()
	// A metadata entry takes at least 14 bytes (key length, a key, type, a value) and a tensor
	// description at least 32: counts beyond what the file could hold are lies.
	if d.err == nil && (nKV > uint64(d.left())/14 || nTensors > uint64(d.left())/32) {
		return nil, fmt.Errorf("%w: %d metadata entries and %d tensors cannot fit in %d bytes", ErrMalformed, nKV, nTensors, len(b))
	}
	for i := uint64(0); i < nKV && d.err == nil; i++ {
		key := d.str()
		if d.err != nil {
			break
		}
		if key == "" {
			return nil, fmt.Errorf("%w: metadata entry %d has an empty key", ErrMalformed, i)
		}
		if _, dup := f.keys[key]; dup {
			return nil, fmt.Errorf("%w: metadata key %q appears twice", ErrMalformed, key)
		}
		v := d.value(ValueType(d.u32()), true)
		if d.err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, d.err)
		}
		f.keys[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		a, ok := v.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("%w: general.alignment %v is not a power of two (uint32)", ErrMalformed, v)
		}
		f.Alignment = uint64(a)
	}
	for i := uint64(0); i < nTensors && d.err == nil; i++ {
		t := TensorInfo{Name: d.str()}
		nd := d.u32()
		if d.err == nil && (nd == 0 || nd > maxDims) {
			return nil, fmt.Errorf("%w: tensor %q has %d dimensions (want 1..%d)", ErrMalformed, t.Name, nd, maxDims)
		}
		n := uint64(1)
		for j := uint32(0); j < nd && d.err == nil; j++ {
			dim := d.u64()
			hi, lo := bits.Mul64(n, dim)
			if d.err == nil && (dim == 0 || hi != 0 || lo > 1<<50) {
				return nil, fmt.Errorf("%w: tensor %q dimension %d is %d", ErrMalformed, t.Name, j, dim)
			}
			n = lo
			t.Dims = append(t.Dims, dim)
		}
		t.Type, t.Offset = TensorType(d.u32()), d.u64()
		if d.err != nil {
			break
		}
		size, err := t.Type.RowBytes(n)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		t.Size = size
		if t.Offset%f.Alignment != 0 {
			return nil, fmt.Errorf("%w: tensor %q at offset %d, not a multiple of the alignment %d", ErrMalformed, t.Name, t.Offset, f.Alignment)
		}
		if _, dup := f.tensors[t.Name]; dup {
			return nil, fmt.Errorf("%w: tensor %q appears twice", ErrMalformed, t.Name)
		}
		f.tensors[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	if d.err != nil {
		return nil, d.err
	}
	start := align(uint64(d.off), f.Alignment)
	if start > uint64(len(b)) {
		start = uint64(len(b)) // a file of no tensor data may end at its header
	}
	f.data = b[start:]
	for _, t := range f.Tensors {
		if t.Offset > uint64(len(f.data)) || t.Size > uint64(len(f.data))-t.Offset {
			return nil, fmt.Errorf("%w: tensor %q (%d bytes at %d) runs past the end of the file (%d bytes of data)",
				ErrMalformed, t.Name, t.Size, t.Offset, len(f.data))
		}
	}
	if err := checkDisjoint(f.Tensors); err != nil {
		return nil, err
	}
	return f, nil
}

// checkDisjoint refuses tensors whose bytes overlap (two names for one region, or one
// tensor's data inside another's): ggml lays them out one after another.
func checkDisjoint(ts []TensorInfo) error {
	byOff := slices.Clone(ts)
	slices.SortFunc(byOff, func(a, b TensorInfo) int { return cmp.Compare(a.Offset, b.Offset) })
	for i := 1; i < len(byOff); i++ {
		if p, t := byOff[i-1], byOff[i]; t.Offset < p.Offset+p.Size {
			return fmt.Errorf("%w: tensors %q (%d bytes at %d) and %q (at %d) overlap", ErrMalformed, p.Name, p.Size, p.Offset, t.Name, t.Offset)
		}
	}
	return nil
}

// Get is a metadata value.
func (f *File) Get(key string) (any, bool) {
	i, ok := f.keys[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// Tensor is a tensor's description and bytes.
func (f *File) Tensor(name string) (TensorInfo, []byte, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return TensorInfo{}, nil, false
	}
	t := f.Tensors[i]
	return t, f.data[t.Offset : t.Offset+t.Size], true
}

// decoder reads little-endian values from b, keeping the first error; a read past b is an
// ErrMalformed error and reads zeros.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) left() int { return len(d.b) - d.off }

func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(d.left()) {
		d.err = fmt.Errorf("%w: truncated: %d bytes wanted at offset %d of %d", ErrMalformed, n, d.off, len(d.b))
		return nil
	}
	p := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return p
}

func (d *decoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) str() string {
	n := d.u64()
	return string(d.take(n))
}

// value reads a value of type t (top: not an array element, so arrays are allowed).
func (d *decoder) value(t ValueType, top bool) any {
	if d.err != nil {
		return nil
	}
	if size, ok := valueSizes[t]; ok {
		p := d.take(uint64(size))
		if p == nil {
			return nil
		}
		switch t {
		case TypeUint8:
			return p[0]
		case TypeInt8:
			return int8(p[0])
		case TypeUint16:
			return binary.LittleEndian.Uint16(p)
		case TypeInt16:
			return int16(binary.LittleEndian.Uint16(p))
		case TypeUint32:
			return binary.LittleEndian.Uint32(p)
		case TypeInt32:
			return int32(binary.LittleEndian.Uint32(p))
		case TypeFloat32:
			return math.Float32frombits(binary.LittleEndian.Uint32(p))
		case TypeBool:
			if p[0] > 1 {
				d.err = fmt.Errorf("%w: a bool of value %d", ErrMalformed, p[0])
			}
			return p[0] == 1
		case TypeUint64:
			return binary.LittleEndian.Uint64(p)
		case TypeInt64:
			return int64(binary.LittleEndian.Uint64(p))
		case TypeFloat64:
			return math.Float64frombits(binary.LittleEndian.Uint64(p))
		}
	}
	switch {
	case t == TypeString:
		return d.str()
	case t == TypeArray && top:
		return d.array()
	}
	d.err = fmt.Errorf("%w: metadata value type %d", ErrMalformed, t)
	return nil
}

// array reads an array's element type and count and skips its elements, which Array.Elements
// decodes on demand: strings are walked (each length checked against the bytes left), numbers
// and bools are a fixed size each.
func (d *decoder) array() any {
	et, n := ValueType(d.u32()), d.u64()
	if d.err != nil {
		return nil
	}
	min := uint64(8) // a string's length
	if size, ok := valueSizes[et]; ok {
		min = uint64(size)
	} else if et != TypeString {
		d.err = fmt.Errorf("%w: an array of value type %d", ErrMalformed, et)
		return nil
	}
	if n > uint64(d.left())/min {
		d.err = fmt.Errorf("%w: an array of %d elements cannot fit in the %d bytes left", ErrMalformed, n, d.left())
		return nil
	}
	start := d.off
	if et == TypeString {
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.take(d.u64())
		}
	} else {
		d.take(n * min)
	}
	if d.err != nil {
		return nil
	}
	if et == TypeBool {
		for _, b := range d.b[start:d.off] {
			if b > 1 {
				d.err = fmt.Errorf("%w: a bool of value %d", ErrMalformed, b)
				return nil
			}
		}
	}
	return Array{Type: et, n: int(n), raw: d.b[start:d.off:d.off]}
}

// decodeElements decodes n elements of type t from d (which array has checked) as []T.
func decodeElements(d *decoder, t ValueType, n int) any {
	switch t {
	case TypeString:
		out := make([]string, n)
		for i := range out {
			out[i] = d.str()
		}
		return out
	case TypeUint8:
		return decodeNums(d, n, func(p []byte) uint8 { return p[0] })
	case TypeInt8:
		return decodeNums(d, n, func(p []byte) int8 { return int8(p[0]) })
	case TypeUint16:
		return decodeNums(d, n, binary.LittleEndian.Uint16)
	case TypeInt16:
		return decodeNums(d, n, func(p []byte) int16 { return int16(binary.LittleEndian.Uint16(p)) })
	case TypeUint32:
		return decodeNums(d, n, binary.LittleEndian.Uint32)
	case TypeInt32:
		return decodeNums(d, n, func(p []byte) int32 { return int32(binary.LittleEndian.Uint32(p)) })
	case TypeFloat32:
		return decodeNums(d, n, func(p []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(p)) })
	case TypeBool:
		return decodeNums(d, n, func(p []byte) bool { return p[0] == 1 })
	case TypeUint64:
		return decodeNums(d, n, binary.LittleEndian.Uint64)
	case TypeInt64:
		return decodeNums(d, n, func(p []byte) int64 { return int64(binary.LittleEndian.Uint64(p)) })
	case TypeFloat64:
		return decodeNums(d, n, func(p []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(p)) })
	}
	return nil
}

func decodeNums[T any](d *decoder, n int, get func([]byte) T) []T {
	out := make([]T, n)
	if n == 0 {
		return out
	}
	size := len(d.b) / n
	for i := range out {
		out[i] = get(d.b[i*size : (i+1)*size])
	}
	return out
}
