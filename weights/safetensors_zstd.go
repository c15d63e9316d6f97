package weights

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// maxZstdWindow bounds the history a zstd frame may ask the decoder to keep:
// 128 MiB, the zstd command line's own default limit (frames made with
// --long=28 or more need more, and are refused).
const maxZstdWindow = 128 << 20

// maxZstdRatio bounds how far a compressed checkpoint may expand: weights compress 1-2x (the
// shipped drafters 1.0-2.0x), a bomb thousands of times.
const maxZstdRatio = 32

// readZstd opens a "*.safetensors.zst" file: it decodes the stream one block
// at a time, checks the header before any data, and expands no more than the
// data the header declares (plus one byte, to find that the stream ends
// there). A small file that would expand to gigabytes is refused after reading
// what its header declares: the data must fit b and maxZstdRatio times the file's size.
func readZstd(path string, b *dataBudget) (*SafeTensors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ratio := &dataBudget{left: maxZstdRatio*fi.Size() + 1<<20, why: fmt.Sprintf("%d times the %d compressed bytes", maxZstdRatio, fi.Size())}
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxZstdWindow))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: zstd: %v", path, ErrMalformed, err)
	}
	defer dec.Close()
	st, err := readStream(dec, b, ratio)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st.path = path
	return st, nil
}

// readStream reads a safetensors file from r: the 8-byte header length, the
// header (validated as parse does), then (once b takes its size) exactly the
// data section up to the largest end offset, then one more byte, which must not
// exist.
func readStream(r io.Reader, budgets ...*dataBudget) (*SafeTensors, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, streamError(err, "the 8-byte header length", 8)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d-byte limit", ErrMalformed, n, MaxHeaderSize)
	}
	hdr, err := readFull(r, int64(n))
	if err != nil {
		return nil, streamError(err, "the header", int64(n))
	}
	st, err := parseHeader(hdr, math.MaxInt)
	if err != nil {
		return nil, err
	}
	size := st.dataSize()
	for _, b := range budgets {
		if err := b.charge(size); err != nil {
			return nil, err
		}
	}
	if st.data, err = readFull(r, size); err != nil {
		return nil, streamError(err, "the data the header declares", int64(size))
	}
	var extra [1]byte
	switch k, err := io.ReadFull(r, extra[:]); {
	case k > 0:
		return nil, fmt.Errorf("%w: the stream goes on beyond the %d bytes of data the header declares", ErrMalformed, size)
	case err != io.EOF:
		return nil, streamError(err, "the end of the stream", 0)
	}
	return st, nil
}

// readFull reads exactly size bytes, growing its buffer as the bytes come (so
// that a size declared by a stream that then ends early costs no more memory
// than the bytes it held).
func readFull(r io.Reader, size int64) ([]byte, error) {
	if size > math.MaxInt {
		return nil, fmt.Errorf("%w: %d bytes do not fit in memory", ErrMalformed, size)
	}
	buf := make([]byte, 0, min(size, 1<<20))
	for int64(len(buf)) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(size, 2*int64(len(buf)))-int64(len(buf))))
		}
		k, err := r.Read(buf[len(buf):min(int64(cap(buf)), size)])
		buf = buf[:len(buf)+k]
		if err == io.EOF && int64(len(buf)) < size {
			return nil, &shortStream{got: int64(len(buf))}
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
	}
	return buf, nil
}

// shortStream is readFull's error for a stream that ended early.
type shortStream struct{ got int64 }

func (e *shortStream) Error() string { return fmt.Sprintf("stream ends after %d bytes", e.got) }

// streamError turns a read error while reading what (want bytes) into an error
// wrapping ErrMalformed.
func streamError(err error, what string, want int64) error {
	var short *shortStream
	switch {
	case errors.As(err, &short):
		return fmt.Errorf("%w: the stream ends after %d of the %d bytes of %s", ErrMalformed, short.got, want, what)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the stream ends inside %s", ErrMalformed, what)
	case errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return fmt.Errorf("%w: zstd frame needs a window over the %d MiB limit (recompress without --long): %v",
			ErrMalformed, maxZstdWindow>>20, err)
	}
	return fmt.Errorf("%w: zstd: reading %s: %v", ErrMalformed, what, err)
}
