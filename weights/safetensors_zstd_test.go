package weights

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// zstdFrame compresses b as one zstd frame.
func zstdFrame(t *testing.T, b []byte, opts ...zstd.EOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zeroBomb is size bytes of zeros (a multiple of 64 MiB) as concatenated zstd
// frames: one 64 MiB frame compressed once and repeated, a few KB in all.
func zeroBomb(t *testing.T, size int64) []byte {
	const chunk = 64 << 20
	frame := zstdFrame(t, make([]byte, chunk), zstd.WithEncoderLevel(zstd.SpeedFastest))
	return bytes.Repeat(frame, int(size/chunk))
}

// allocated is how many bytes of heap f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A .zst checkpoint is decompressed only as far as its header declares: a
// small file that expands to a gigabyte after a valid or invalid header, or
// whose header declares far more data than the stream holds, is refused
// without expanding (or allocating) more than the header's size.
func TestZstdBounded(t *testing.T) {
	const bomb = 1 << 30
	const budget = 64 << 20 // allocations allowed for one Open
	tiny := rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 16))
	huge := rawFile(`{"a":{"dtype":"F32","shape":[268435456],"data_offsets":[0,1073741824]}}`, make([]byte, 100))
	longHeader := make([]byte, 8+20) // a header of MaxHeaderSize bytes, cut after 20
	binary.LittleEndian.PutUint64(longHeader, MaxHeaderSize)
	cases := []struct {
		name    string
		file    []byte // the compressed file
		mention string
	}{
		{"valid header, a gigabyte of zeros after the data", append(zstdFrame(t, tiny), zeroBomb(t, bomb)...), "beyond"},
		{"bad header, a gigabyte of zeros after it", append(zstdFrame(t, rawFile(`{"a":`, nil)), zeroBomb(t, bomb)...), "header"},
		{"header length over the limit, then zeros", append(zstdFrame(t, []byte{0, 0, 0, 0, 0, 1, 0, 0}), zeroBomb(t, bomb)...), "limit"},
		{"header declares a gigabyte, stream holds 100 bytes", zstdFrame(t, huge), "compressed bytes"},
		{"header length of 100 MiB, stream holds 20 bytes", zstdFrame(t, longHeader), "ends"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "model.safetensors.zst")
			if err := os.WriteFile(path, c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			n := allocated(func() {
				var st *SafeTensors
				if st, err = Open(path); err == nil {
					st.Close()
				}
			})
			t.Logf("%d-byte file: %d bytes allocated: %v", len(c.file), n, err)
			if !(errors.Is(err, ErrMalformed) || errors.Is(err, ErrShape)) || !strings.Contains(err.Error(), c.mention) {
				t.Errorf("got %v, want ErrMalformed or ErrShape mentioning %q", err, c.mention)
			}
			if n > budget {
				t.Errorf("allocated %d MiB, want at most %d MiB", n>>20, budget>>20)
			}
		})
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// readStream takes from the decompressed stream exactly the 8-byte length, the
// header and the data it declares, and one byte more to find that the stream
// goes on.
func TestZstdReadsOneByteBeyond(t *testing.T) {
	tiny := rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 16))
	dec, err := zstd.NewReader(bytes.NewReader(append(zstdFrame(t, tiny), zeroBomb(t, 1<<30)...)))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	cr := &countingReader{r: dec}
	if _, err := readStream(cr, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
	if want := int64(len(tiny) + 1); cr.n != want {
		t.Fatalf("read %d decompressed bytes, want %d", cr.n, want)
	}
}

// A frame asking for a window over maxZstdWindow is refused, saying why; a
// file over the 1 MiB first buffer (with a window of 8 MiB) reads back.
func TestZstdWindowAndSize(t *testing.T) {
	dir := t.TempDir()
	tiny := rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 16))
	path := filepath.Join(dir, "wide.safetensors.zst")
	// A frame by hand: magic, a descriptor with no content size (so the window
	// descriptor counts), window 2^28 bytes, one raw block holding tiny.
	frame := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, (28 - 10) << 3}
	blk := uint32(len(tiny))<<3 | 1 // last block, raw
	frame = append(append(frame, byte(blk), byte(blk>>8), byte(blk>>16)), tiny...)
	os.WriteFile(path, frame, 0o644)
	if _, err := Open(path); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "window") {
		t.Fatalf("256 MiB window: got %v, want ErrMalformed about the window", err)
	}
	big := F32Tensor("big", []int{3 << 20}, randomFloats(3<<20, 7))
	path = filepath.Join(dir, "big.safetensors.zst")
	if err := WriteSafeTensors(path, []Tensor{F32Tensor("s", []int{1}, []float32{1}), big}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Tensor("big"); err != nil || !bytes.Equal(got.Data, big.Data) {
		t.Fatalf("12 MiB tensor read back wrong: %v", err)
	}
}
