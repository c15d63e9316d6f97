package weights

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// WriteSafeTensors writes tensors to path as a safetensors file: the header
// lists __metadata__ (when not empty, keys sorted) and then the tensors in the
// order given, their data packed contiguously in that order; the header is
// padded with spaces so that the data starts at an 8-byte boundary. A path
// ending in ".zst" is written zstd-compressed. The file is written to a
// temporary name and renamed into place.
//
// Names must be unique and non-empty (and not "__metadata__"), dtypes known,
// and each Data exactly product(Shape)*DType.Size() bytes.
func WriteSafeTensors(path string, tensors []Tensor, metadata map[string]string) error {
	hdr, err := encodeHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := writeBody(tmp, strings.HasSuffix(path, ".zst"), hdr, tensors); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	return nil
}

// writeBody writes the length, header and data, compressed when zst is set.
func writeBody(f *os.File, zst bool, hdr []byte, tensors []Tensor) error {
	var w io.Writer
	bw := bufio.NewWriterSize(f, 1<<20)
	w = bw
	var enc *zstd.Encoder
	if zst {
		var err error
		if enc, err = zstd.NewWriter(bw); err != nil {
			return err
		}
		w = enc
	}
	var lenBuf [8]byte
	for i := 0; i < 8; i++ {
		lenBuf[i] = byte(uint64(len(hdr)) >> (8 * i))
	}
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	if enc != nil {
		if err := enc.Close(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// encodeHeader validates the tensors and builds the padded JSON header.
func encodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	comma := func() {
		if !first {
			b.WriteByte(',')
		}
		first = false
	}
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		comma()
		b.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, metadata[k])
		}
		b.WriteByte('}')
	}
	seen := make(map[string]bool, len(tensors))
	offset := 0
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return nil, fmt.Errorf("%w: invalid tensor name %q", ErrMalformed, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: tensor %q listed twice", ErrMalformed, t.Name)
		}
		seen[t.Name] = true
		if _, err := t.checkSize(); err != nil {
			return nil, err
		}
		comma()
		writeJSONString(&b, t.Name)
		b.WriteString(`:{"dtype":`)
		writeJSONString(&b, string(t.DType))
		b.WriteString(`,"shape":[`)
		for i, d := range t.Shape {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		end := offset + len(t.Data)
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, offset, end)
		offset = end
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header of %d bytes exceeds the %d-byte limit", ErrMalformed, b.Len(), MaxHeaderSize)
	}
	return b.Bytes(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}
