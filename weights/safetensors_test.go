package weights

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rawFile builds safetensors bytes from a literal header and a data section.
func rawFile(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestParseMalformed(t *testing.T) {
	data16 := make([]byte, 16)
	cases := []struct {
		name string
		file []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"short length", []byte{1, 2, 3}, ErrMalformed},
		{"truncated header", rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data16)[:20], ErrMalformed},
		{"header too long", func() []byte {
			b := make([]byte, 16)
			binary.LittleEndian.PutUint64(b, MaxHeaderSize+1)
			return b
		}(), ErrMalformed},
		{"header length past end", func() []byte {
			b := rawFile(`{}`, nil)
			binary.LittleEndian.PutUint64(b, 1<<40)
			return b
		}(), ErrMalformed},
		{"bad JSON", rawFile(`{"a":`, data16), ErrMalformed},
		{"not an object", rawFile(`[1,2]`, data16), ErrMalformed},
		{"null header", rawFile(`null`, data16), ErrMalformed},
		{"entry not an object", rawFile(`{"a":3}`, data16), ErrMalformed},
		{"missing offsets", rawFile(`{"a":{"dtype":"F32","shape":[4]}}`, data16), ErrMalformed},
		{"missing shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,16]}}`, data16), ErrMalformed},
		{"bad dtype", rawFile(`{"a":{"dtype":"F24","shape":[4],"data_offsets":[0,16]}}`, data16), ErrDType},
		{"offsets out of range", rawFile(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}`, data16), ErrMalformed},
		{"negative offset", rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[-4,-4]}}`, data16), ErrMalformed},
		{"begin after end", rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}`, data16), ErrMalformed},
		{"three offsets", rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,8,16]}}`, data16), ErrMalformed},
		{"wrong size", rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}}`, data16), ErrMalformed},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}}`, data16), ErrMalformed},
		{"overflowing shape", rawFile(`{"a":{"dtype":"F32","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,16]}}`, data16), ErrMalformed},
		{"fractional dim", rawFile(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,16]}}`, data16), ErrMalformed},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, data16), ErrMalformed},
		{"same range", rawFile(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[4,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}}`, data16), ErrMalformed},
		{"bad metadata", rawFile(`{"__metadata__":{"k":1}}`, nil), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(c.file)
			if !errors.Is(err, c.want) {
				t.Fatalf("parse: got %v, want %v", err, c.want)
			}
		})
	}
}

func TestParseValidEdgeCases(t *testing.T) {
	// __metadata__, a scalar, an empty tensor sharing an offset, padding spaces.
	hdr := `{"__metadata__":{"format":"pt"},"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},` +
		`"e":{"dtype":"BF16","shape":[0,3],"data_offsets":[4,4]},"v":{"dtype":"I64","shape":[1],"data_offsets":[4,12]}}   `
	data := make([]byte, 12)
	binary.LittleEndian.PutUint32(data, math.Float32bits(2.5))
	st, err := parse(rawFile(hdr, data))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Names(); !slices.Equal(got, []string{"e", "s", "v"}) {
		t.Fatalf("names %v", got)
	}
	if st.Metadata()["format"] != "pt" {
		t.Fatalf("metadata %v", st.Metadata())
	}
	s, _ := st.Tensor("s")
	if f, err := s.Float32(); err != nil || len(f) != 1 || f[0] != 2.5 {
		t.Fatalf("scalar: %v %v", f, err)
	}
	v, _ := st.Tensor("v")
	if _, err := v.Float32(); !errors.Is(err, ErrDType) {
		t.Fatalf("I64 Float32: %v", err)
	}
	if _, err := st.Tensor("nope"); !errors.Is(err, ErrMissingTensor) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing: %v", err)
	}
}

func randomFloats(n int, seed uint32) []float32 {
	out := make([]float32, n)
	x := seed | 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		out[i] = float32(int32(x))/float32(math.MaxInt32)*4 - 0.001
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for _, zst := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "m.safetensors")
		if zst {
			path += ".zst"
		}
		f := randomFloats(6*7, 1)
		tensors := []Tensor{
			F32Tensor("z.f32", []int{6, 7}, f),
			F16Tensor("a.f16", []int{42}, f),
			BF16Tensor("m.bf16", []int{2, 3, 7}, f),
			{Name: "ids", DType: I32, Shape: []int{2}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0}},
		}
		if err := WriteSafeTensors(path, tensors, map[string]string{"format": "pt", "note": `quote " and \ back`}); err != nil {
			t.Fatal(err)
		}
		st, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Metadata()["note"] != `quote " and \ back` {
			t.Fatalf("metadata %v", st.Metadata())
		}
		for _, want := range tensors {
			got, err := st.Tensor(want.Name)
			if err != nil {
				t.Fatal(err)
			}
			if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("%s: got %s %v, want %s %v", want.Name, got.DType, got.Shape, want.DType, want.Shape)
			}
		}
		check := func(name string, tol float64) {
			tt, _ := st.Tensor(name)
			g, err := tt.Float32()
			if err != nil {
				t.Fatal(err)
			}
			for i := range f {
				if d := math.Abs(float64(g[i] - f[i])); d > tol*math.Abs(float64(f[i]))+1e-7 {
					t.Fatalf("%s[%d] = %v, want %v", name, i, g[i], f[i])
				}
			}
		}
		check("z.f32", 0)
		check("a.f16", 1.0/2048)
		check("m.bf16", 1.0/256)
		h, _ := st.Tensor("a.f16")
		bits, err := h.Float16Bits()
		if err != nil || F16ToF32(bits[3]) != F16ToF32(F32ToF16(f[3])) {
			t.Fatalf("Float16Bits: %v %v", bits[:4], err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		// The header is padded to 8 bytes and the file parses the same way
		// when read whole.
		if !zst {
			b, _ := os.ReadFile(path)
			if n := binary.LittleEndian.Uint64(b); n%8 != 0 {
				t.Fatalf("header length %d not a multiple of 8", n)
			}
		}
	}
}

func TestWriteRejectsBadTensors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	bad := [][]Tensor{
		{F32Tensor("a", []int{3}, []float32{1, 2})},
		{F32Tensor("a", []int{1}, []float32{1}), F32Tensor("a", []int{1}, []float32{1})},
		{F32Tensor("", []int{1}, []float32{1})},
		{{Name: "q", DType: "Q4", Shape: []int{1}, Data: []byte{0}}},
		{F32Tensor("a", []int{-1}, nil)},
	}
	for i, ts := range bad {
		if err := WriteSafeTensors(path, ts, nil); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed write left %s behind", path)
	}
}

func TestOpenMissingAndBadFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "none.safetensors")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, "empty.safetensors")
	os.WriteFile(p, nil, 0o644)
	if _, err := Open(p); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty file: %v", err)
	}
	z := filepath.Join(dir, "bad.safetensors.zst")
	os.WriteFile(z, []byte("not zstd at all"), 0o644)
	if _, err := Open(z); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad zstd: %v", err)
	}
}

func TestCheckpointSingleAndSharded(t *testing.T) {
	a := F32Tensor("a", []int{2}, []float32{1, 2})
	b := F16Tensor("b", []int{3}, []float32{3, 4, 5})
	c := BF16Tensor("c", []int{1}, []float32{6})

	single := t.TempDir()
	if err := WriteSafeTensors(filepath.Join(single, "model.safetensors.zst"), []Tensor{a, b, c}, nil); err != nil {
		t.Fatal(err)
	}
	sharded := t.TempDir()
	WriteSafeTensors(filepath.Join(sharded, "model-00001-of-00002.safetensors"), []Tensor{a, b}, nil)
	WriteSafeTensors(filepath.Join(sharded, "model-00002-of-00002.safetensors.zst"), []Tensor{c}, nil)
	index := `{"metadata":{"total_size":12},"weight_map":{"a":"model-00001-of-00002.safetensors",` +
		`"b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}}`
	os.WriteFile(filepath.Join(sharded, IndexFileName), []byte(index), 0o644)

	for _, dir := range []string{single, sharded} {
		ck, err := OpenCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := ck.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("%s: names %v", dir, got)
		}
		for _, want := range []Tensor{a, b, c} {
			got, err := ck.Tensor(want.Name)
			if err != nil || !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("%s: %s: %v", dir, want.Name, err)
			}
		}
		if _, err := ck.Tensor("model.norm.weight"); !errors.Is(err, ErrMissingTensor) || !strings.Contains(err.Error(), "model.norm.weight") {
			t.Fatalf("missing tensor error %v", err)
		}
		if err := ck.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// An index naming a tensor its shard lacks, or a file outside the folder.
	for _, idx := range []string{
		`{"weight_map":{"a":"model-00001-of-00002.safetensors","zz":"model-00001-of-00002.safetensors"}}`,
		`{"weight_map":{"a":"../model-00001-of-00002.safetensors"}}`,
		`{"weight_map":{}}`,
		`{"weight_map":`,
	} {
		os.WriteFile(filepath.Join(sharded, IndexFileName), []byte(idx), 0o644)
		if _, err := OpenCheckpoint(sharded); err == nil {
			t.Errorf("index %s: no error", idx)
		}
	}
	if _, err := OpenCheckpoint(t.TempDir()); !os.IsNotExist(errors.Unwrap(err)) && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty folder: %v", err)
	}
}

func FuzzSafeTensorsHeader(f *testing.F) {
	var buf bytes.Buffer
	hdr, _ := encodeHeader([]Tensor{
		F32Tensor("w", []int{2, 2}, []float32{1, 2, 3, 4}),
		F16Tensor("h", []int{3}, []float32{1, 2, 3}),
		BF16Tensor("b", []int{1}, []float32{5}),
	}, map[string]string{"format": "pt"})
	buf.Write(rawFile(string(hdr), make([]byte, 16+6+2)))
	f.Add(buf.Bytes())
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, make([]byte, 16)))
	f.Add(rawFile(`{"a":{"dtype":"F16","shape":[0,7],"data_offsets":[2,2]}}`, make([]byte, 4)))
	f.Add(rawFile(`{"__metadata__":null}`, nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{'})
	f.Fuzz(func(t *testing.T, b []byte) {
		// The streaming reader (of .zst files) accepts a subset of what parse
		// accepts (no bytes after the last tensor), with the same tensors.
		st, err := parse(b)
		if sst, serr := readStream(bytes.NewReader(b), nil); serr != nil {
			if !errors.Is(serr, ErrMalformed) && !errors.Is(serr, ErrDType) {
				t.Fatalf("readStream error wraps no sentinel: %v", serr)
			}
		} else if err != nil || !slices.Equal(sst.Names(), st.Names()) {
			t.Fatalf("readStream accepts what parse refuses (%v), or reads other tensors", err)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrDType) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		for _, name := range st.Names() {
			tt, err := st.Tensor(name)
			if err != nil {
				t.Fatal(err)
			}
			n, err := tt.NumElements()
			if err != nil || n*tt.DType.Size() != len(tt.Data) {
				t.Fatalf("%s: %d elements of %s in %d bytes (%v)", name, n, tt.DType, len(tt.Data), err)
			}
			if tt.DType.IsFloat() {
				if _, err := tt.Float32(); err != nil {
					t.Fatal(err)
				}
				if _, err := tt.Float16Bits(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
