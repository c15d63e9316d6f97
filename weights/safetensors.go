package weights

// This file reads safetensors files (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON describing each
// tensor (dtype, shape, data_offsets into the data section that follows), then
// the data. Everything in the header is validated before any of it is used.
// A "*.safetensors.zst" file is the same thing compressed with zstd; it is
// decompressed into memory, header first (safetensors_zstd.go).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// MaxHeaderSize is the largest safetensors JSON header accepted (100 MiB, the
// limit of the reference implementation).
const MaxHeaderSize = 100 << 20

// Tensor is one named tensor. Data is little-endian, row-major, exactly
// product(Shape)*DType.Size() bytes. A Tensor read from a SafeTensors or
// Checkpoint points into the (memory-mapped) file: it is read-only and valid
// only until that file is closed.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// tensorInfo is one validated header entry.
type tensorInfo struct {
	dtype      DType
	shape      []int
	begin, end int // offsets into the data section
}

// SafeTensors is an open safetensors file.
type SafeTensors struct {
	path     string
	data     []byte // the data section
	release  func() error
	tensors  map[string]tensorInfo
	names    []string // sorted
	metadata map[string]string
	mapped   bool // data is a read-only mapping of the file (its pages can be dropped)
}

// Open opens a safetensors file, memory-mapped read-only, or a
// "*.safetensors.zst" file, decompressed into memory (see readZstd). The header
// is validated completely: a malformed file gives an error wrapping
// ErrMalformed or ErrDType.
func Open(path string) (*SafeTensors, error) { return openWithin(path, nil) }

// openWithin is Open charging the data the header declares to b (nil: no bound) before any
// of it is read or expanded.
func openWithin(path string, b *dataBudget) (*SafeTensors, error) {
	if strings.HasSuffix(path, ".zst") {
		return readZstd(path, b)
	}
	m, release, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	st, err := parse(m)
	if err == nil {
		err = b.charge(st.dataSize())
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st.path, st.release, st.mapped = path, release, mappedFiles
	return st, nil
}

// dataBudget bounds the tensor bytes a checkpoint's headers may declare: what its
// config.json allows, so that a header that lies about its shapes is refused before a
// compressed file is expanded.
type dataBudget struct {
	left int64
	why  string // where the bound comes from
}

// charge takes n bytes from the budget, or says why they do not fit (a nil budget takes all).
func (b *dataBudget) charge(n int64) error {
	if b == nil {
		return nil
	}
	if n > b.left {
		return fmt.Errorf("%w: the header declares %d bytes of tensors, more than %s allows (%d left)", ErrShape, n, b.why, b.left)
	}
	b.left -= n
	return nil
}

// dataSize is the bytes of data the header declares (the largest end offset).
func (s *SafeTensors) dataSize() int64 {
	size := 0
	for _, info := range s.tensors {
		size = max(size, info.end)
	}
	return int64(size)
}

// headerEntry is the JSON of one tensor in the header. Pointers tell a missing
// field from a zero one.
type headerEntry struct {
	DType   *string  `json:"dtype"`
	Shape   *[]int64 `json:"shape"`
	Offsets *[]int64 `json:"data_offsets"`
}

// parse validates a whole safetensors file held in b and returns a SafeTensors
// whose tensors point into b. Open uses it; so does FuzzSafeTensorsHeader.
func parse(b []byte) (*SafeTensors, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, too short for the 8-byte header length", ErrMalformed, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d-byte limit", ErrMalformed, n, MaxHeaderSize)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%w: header length %d runs past the end of the %d-byte file", ErrMalformed, n, len(b))
	}
	st, err := parseHeader(b[8:8+n], len(b)-8-int(n))
	if err != nil {
		return nil, err
	}
	st.data = b[8+n:]
	return st, nil
}

// parseHeader validates the JSON header hdr against a data section of dataLen
// bytes and returns a SafeTensors without its data.
func parseHeader(hdr []byte, dataLen int) (*SafeTensors, error) {
	trimmed := bytes.TrimLeft(hdr, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: header is not a JSON object", ErrMalformed)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("%w: header JSON: %v", ErrMalformed, err)
	}
	st := &SafeTensors{tensors: make(map[string]tensorInfo, len(raw))}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &st.metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ must map strings to strings: %v", ErrMalformed, err)
			}
			continue
		}
		info, err := parseEntry(msg, dataLen)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		st.tensors[name] = info
		st.names = append(st.names, name)
	}
	sort.Strings(st.names)
	if err := checkOverlaps(st); err != nil {
		return nil, err
	}
	return st, nil
}

// parseEntry validates one tensor's header entry against a data section of
// dataLen bytes.
func parseEntry(msg json.RawMessage, dataLen int) (tensorInfo, error) {
	var e headerEntry
	if err := json.Unmarshal(msg, &e); err != nil {
		return tensorInfo{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if e.DType == nil || e.Shape == nil || e.Offsets == nil {
		return tensorInfo{}, fmt.Errorf("%w: entry needs dtype, shape and data_offsets", ErrMalformed)
	}
	dt := DType(*e.DType)
	if !dt.Known() {
		return tensorInfo{}, fmt.Errorf("%w: %q", ErrDType, *e.DType)
	}
	shape := make([]int, len(*e.Shape))
	for i, d := range *e.Shape {
		if d < 0 || d > math.MaxInt32 {
			return tensorInfo{}, fmt.Errorf("%w: dimension %d out of range in shape %v", ErrMalformed, d, *e.Shape)
		}
		shape[i] = int(d)
	}
	numel, err := numElements(shape)
	if err != nil {
		return tensorInfo{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	off := *e.Offsets
	if len(off) != 2 {
		return tensorInfo{}, fmt.Errorf("%w: data_offsets must be [begin, end], got %d numbers", ErrMalformed, len(off))
	}
	begin, end := off[0], off[1]
	if begin < 0 || end < begin || end > int64(dataLen) {
		return tensorInfo{}, fmt.Errorf("%w: data_offsets [%d, %d] outside the %d-byte data section",
			ErrMalformed, begin, end, dataLen)
	}
	size := dt.Size()
	if numel > math.MaxInt/size || int64(numel*size) != end-begin {
		return tensorInfo{}, fmt.Errorf("%w: shape %v of %s needs %d elements but data_offsets span %d bytes",
			ErrMalformed, shape, dt, numel, end-begin)
	}
	return tensorInfo{dtype: dt, shape: shape, begin: int(begin), end: int(end)}, nil
}

// checkOverlaps rejects two non-empty tensors whose byte ranges intersect.
func checkOverlaps(st *SafeTensors) error {
	type span struct {
		name       string
		begin, end int
	}
	spans := make([]span, 0, len(st.names))
	for _, name := range st.names {
		if info := st.tensors[name]; info.end > info.begin {
			spans = append(spans, span{name, info.begin, info.end})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return fmt.Errorf("%w: tensors %q [%d, %d] and %q [%d, %d] overlap", ErrMalformed,
				spans[i-1].name, spans[i-1].begin, spans[i-1].end, spans[i].name, spans[i].begin, spans[i].end)
		}
	}
	return nil
}

// Path is the file this was opened from.
func (s *SafeTensors) Path() string { return s.path }

// Names lists the tensors, sorted.
func (s *SafeTensors) Names() []string { return append([]string(nil), s.names...) }

// Has reports whether the file holds a tensor called name.
func (s *SafeTensors) Has(name string) bool {
	_, ok := s.tensors[name]
	return ok
}

// Metadata is a copy of the header's __metadata__ (nil when absent).
func (s *SafeTensors) Metadata() map[string]string {
	if s.metadata == nil {
		return nil
	}
	m := make(map[string]string, len(s.metadata))
	for k, v := range s.metadata {
		m[k] = v
	}
	return m
}

// Tensor returns the named tensor; its Data points into the file (read-only,
// valid until Close). A name the file lacks gives ErrMissingTensor.
func (s *SafeTensors) Tensor(name string) (Tensor, error) {
	info, ok := s.tensors[name]
	if !ok {
		return Tensor{}, fmt.Errorf("%w: %q not in %s", ErrMissingTensor, name, s.path)
	}
	return Tensor{
		Name:  name,
		DType: info.dtype,
		Shape: append([]int(nil), info.shape...),
		Data:  s.data[info.begin:info.end:info.end],
	}, nil
}

// Close unmaps the file. Tensors read from it must not be used afterwards.
func (s *SafeTensors) Close() error {
	s.data, s.tensors, s.names = nil, nil, nil
	if s.release == nil {
		return nil
	}
	r := s.release
	s.release = nil
	return r()
}
