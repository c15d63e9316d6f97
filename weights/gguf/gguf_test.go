package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

// sample is a small file: every scalar type, string and number arrays, an F32 matrix, an F16
// vector and a Q8_0 row.
func sample(t testing.TB) ([]byte, []KV, map[string][]byte) {
	kvs := []KV{
		{"general.architecture", "llama"}, {"u8", uint8(7)}, {"i8", int8(-7)}, {"u16", uint16(700)},
		{"i16", int16(-700)}, {"u32", uint32(70000)}, {"i32", int32(-70000)}, {"f32", float32(1.5)},
		{"b", true}, {"u64", uint64(1 << 40)}, {"i64", int64(-1 << 40)}, {"f64", 2.25},
		{"tokens", Array{Type: TypeString, Values: []string{"a", "", "<|x|>"}}},
		{"types", Array{Type: TypeInt32, Values: []int32{1, 3, 4}}},
		{"scores", Array{Type: TypeFloat32, Values: []float32{-1, 0, 0.5}}},
	}
	mat := make([]byte, 3*5*4)
	for i := 0; i < 15; i++ {
		binary.LittleEndian.PutUint32(mat[4*i:], math.Float32bits(float32(i)))
	}
	data := map[string][]byte{"m": mat, "v": {1, 2, 3, 4, 5, 6}, "q": bytes.Repeat([]byte{9}, 34)}
	var buf bytes.Buffer
	err := Write(&buf, kvs, []Tensor{
		{Name: "m", Dims: []uint64{5, 3}, Type: F32, Write: Bytes(data["m"])},
		{Name: "v", Dims: []uint64{3}, Type: F16, Write: Bytes(data["v"])},
		{Name: "q", Dims: []uint64{32}, Type: Q8_0, Write: Bytes(data["q"])},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), kvs, data
}

func TestRoundTrip(t *testing.T) {
	b, kvs, data := sample(t)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || !reflect.DeepEqual(decoded(f.KV), kvs) {
		t.Fatalf("metadata: got %#v", f.KV)
	}
	for name, want := range data {
		info, got, ok := f.Tensor(name)
		if !ok || !bytes.Equal(got, want) || info.Offset%DefaultAlignment != 0 {
			t.Errorf("tensor %s: %+v %v", name, info, got)
		}
	}
	if info, _, _ := f.Tensor("m"); !reflect.DeepEqual(info.Dims, []uint64{5, 3}) || info.Elements() != 15 || info.Type != F32 {
		t.Errorf("m: %+v", info)
	}
}

// decoded is kvs with each parsed array's elements decoded into Values, as Write takes them.
func decoded(kvs []KV) []KV {
	out := append([]KV(nil), kvs...)
	for i, kv := range out {
		if a, ok := kv.Value.(Array); ok {
			out[i].Value = Array{Type: a.Type, Values: a.Elements()}
		}
	}
	return out
}

// Every truncation of a valid file is refused with ErrMalformed, never a panic.
func TestTruncated(t *testing.T) {
	b, _, _ := sample(t)
	for n := 0; n < len(b); n++ {
		if _, err := Parse(b[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d of %d: %v", n, len(b), err)
		}
	}
}

// header builds a file by hand: magic, version, counts, then body.
func header(version uint32, nTensors, nKV uint64, body ...[]byte) []byte {
	b := []byte(Magic)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, nTensors)
	b = binary.LittleEndian.AppendUint64(b, nKV)
	for _, p := range body {
		b = append(b, p...)
	}
	return b
}

func gstr(s string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, uint64(len(s))), s...)
}
func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// tensorInfo is a tensor description of one dimension.
func tensorInfo(name string, dim uint64, typ uint32, off uint64) []byte {
	return bytes.Join([][]byte{gstr(name), u32(1), u64(dim), u32(typ), u64(off)}, nil)
}

func TestMalformed(t *testing.T) {
	pad := make([]byte, 64)
	cases := map[string][]byte{
		"not gguf":            []byte("GGML...................."),
		"version 1":           header(1, 0, 0),
		"version 4":           header(4, 0, 0),
		"huge kv count":       header(3, 0, 1<<62),
		"huge tensor count":   header(3, 1<<40, 0),
		"huge string":         header(3, 0, 1, u64(1<<60)),
		"empty key":           header(3, 0, 1, gstr(""), u32(uint32(TypeUint8)), []byte{1}),
		"duplicate key":       header(3, 0, 2, gstr("a"), u32(uint32(TypeUint8)), []byte{1}, gstr("a"), u32(uint32(TypeUint8)), []byte{1}),
		"unknown value type":  header(3, 0, 1, gstr("a"), u32(99), pad),
		"bad bool":            header(3, 0, 1, gstr("a"), u32(uint32(TypeBool)), []byte{2}),
		"huge array":          header(3, 0, 1, gstr("a"), u32(uint32(TypeArray)), u32(uint32(TypeUint32)), u64(1<<61), pad),
		"array of arrays":     header(3, 0, 1, gstr("a"), u32(uint32(TypeArray)), u32(uint32(TypeArray)), u64(1), pad),
		"alignment 3":         header(3, 0, 1, gstr("general.alignment"), u32(uint32(TypeUint32)), u32(3)),
		"alignment as string": header(3, 0, 1, gstr("general.alignment"), u32(uint32(TypeString)), gstr("32")),
		"zero dims":           header(3, 1, 0, gstr("t"), u32(0), u32(0), u64(0), pad),
		"five dims":           header(3, 1, 0, gstr("t"), u32(5), pad),
		"zero dim":            header(3, 1, 0, tensorInfo("t", 0, 0, 0), pad),
		"overflowing dims":    header(3, 1, 0, gstr("t"), u32(2), u64(1<<40), u64(1<<40), u32(0), u64(0), pad),
		"unknown type":        header(3, 1, 0, tensorInfo("t", 4, 99, 0), pad),
		"partial block":       header(3, 1, 0, tensorInfo("t", 31, uint32(Q8_0), 0), pad),
		"misaligned":          header(3, 1, 0, tensorInfo("t", 4, 0, 4), pad),
		"past the end":        header(3, 1, 0, tensorInfo("t", 1<<20, 0, 0), pad),
		"offset past end":     header(3, 1, 0, tensorInfo("t", 1, 0, 1<<62), pad),
		"duplicate tensor":    header(3, 2, 0, tensorInfo("t", 1, 0, 0), tensorInfo("t", 1, 0, 32), pad),
		"same bytes":          header(3, 2, 0, tensorInfo("a", 4, 0, 0), tensorInfo("b", 4, 0, 0), pad, pad),
		"overlapping":         header(3, 2, 0, tensorInfo("a", 4, 0, 32), tensorInfo("b", 16, 0, 0), pad, pad),
	}
	for name, b := range cases {
		if _, err := Parse(b); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestWriteChecksSizes(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, nil, []Tensor{{Name: "t", Dims: []uint64{4}, Type: F32, Write: Bytes(make([]byte, 12))}})
	if err == nil {
		t.Fatal("a tensor written short: no error")
	}
	if err := Write(&buf, []KV{{"k", []int{1}}}, nil); err == nil {
		t.Fatal("a value of an unsupported Go type: no error")
	}
}

func FuzzParse(f *testing.F) {
	b, _, _ := sample(f)
	f.Add(b)
	f.Add(header(3, 1, 1, gstr("general.alignment"), u32(uint32(TypeUint32)), u32(64), tensorInfo("t", 8, 0, 0), make([]byte, 128)))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		for _, ti := range file.Tensors {
			if _, data, ok := file.Tensor(ti.Name); !ok || uint64(len(data)) != ti.Size {
				t.Fatalf("tensor %q: %d bytes, size %d", ti.Name, len(data), ti.Size)
			}
		}
	})
}
