package runtime

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// Linear is a weight matrix [Rows, K] (Hugging Face [out, in] layout) on the device, in f32 or
// f16, in the blocked layout the matmul and embed kernels read (wgsl/mat_io.wgsl): blocks of 8
// rows, and in each block a row's groups of g = GroupK(type) values (4 for f32, 8 for f16: one
// 16-byte load a lane) interleaved row by row, kg = ceil(K/g) groups a row:
//
//	element (n, k) at (((n/8)*kg + k/g)*8 + n%8)*g + k%g, zeros past K and past the last row
//
// so the 8 lanes of a subgroup read 128 contiguous bytes (one row each) at every step. Rows of a
// block-quantized type (wgsl.Q4_K, ...) keep GGUF's blocks, as u32 words in the same layout with
// the row's words in place of its values, 4 words a group (wgsl/quant.wgsl). A matrix bigger
// than one storage binding is split into parts of whole blocks; a matrix stacked from tensors
// of different types (a Q4_K_M file's Q4_K q and k with a Q6_K v) has a part per type, each
// its own dispatch.
type Linear struct {
	Rows, K int
	parts   []linearPart
}

type linearPart struct {
	buf        *webgpu.Buffer
	row0, rows int
	wt         wgsl.WeightType
}

// Segment is a run of rows of one weight type in a matrix (NewLinearSegments).
type Segment struct {
	Rows int
	WT   wgsl.WeightType
}

// Block is the number of rows interleaved in the weight layout.
const Block = 8

// GroupK is the number of values of a row that a lane loads at once in the blocked layout of
// weight type wt (the kernels' WK): 4 f32 values or 8 f16 values, 16 bytes either way (a CPU
// adapter pays per load, not per byte). Quantized rows are laid out as u32 words, 4 a group.
func GroupK(wt wgsl.WeightType) int {
	if wt == wgsl.F16 {
		return 8
	}
	return 4
}

// BlockedLayout returns w ([rows, k] row-major) in the blocked layout of weight type wt (f32 or
// f16), as float32.
func BlockedLayout(w []float32, rows, k int, wt wgsl.WeightType) []float32 {
	return blocked(w, rows, k, GroupK(wt))
}

// blocked lays w ([rows, k] row-major) out in blocks of Block rows: within a block, the g
// values of each row at columns g*c .. g*c + g - 1 are contiguous, and the rows' groups follow
// each other for column group c (so a subgroup's loads are contiguous). Padding is zero.
func blocked[T float32 | uint16 | uint32](w []T, rows, k, g int) []T {
	kg := (k + g - 1) / g
	blocks := (rows + Block - 1) / Block
	out := make([]T, blocks*kg*Block*g)
	for n := 0; n < rows; n++ {
		row := w[n*k : (n+1)*k]
		base := (n/Block)*kg*Block*g + (n%Block)*g
		for c := 0; c < kg; c++ {
			copy(out[base+c*Block*g:base+c*Block*g+g], row[c*g:min(c*g+g, k)])
		}
	}
	return out
}

// UploadLinear copies w ([rows, k]) to the device in weight type wt.
func (d *Device) UploadLinear(name string, w []float32, rows, k int, wt wgsl.WeightType) (*Linear, error) {
	if len(w) != rows*k {
		return nil, fmt.Errorf("runtime: %s has %d values, want %d x %d", name, len(w), rows, k)
	}
	l, err := d.NewLinear(name, rows, k, wt)
	if err != nil {
		return nil, err
	}
	if err := l.WriteRows(0, w); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// NewLinear makes a [rows, k] matrix of weight type wt on the device (zeros until written),
// split into parts of whole blocks that each fit a storage binding.
func (d *Device) NewLinear(name string, rows, k int, wt wgsl.WeightType) (*Linear, error) {
	return d.NewLinearSegments(name, k, []Segment{{rows, wt}})
}

// NewLinearSegments makes a matrix of k columns whose rows are the segments' in order, each in
// its weight type. Every segment but the last has a whole number of blocks of rows, and a
// quantized segment's k is whole blocks of its type.
func (d *Device) NewLinearSegments(name string, k int, segs []Segment) (*Linear, error) {
	l := &Linear{K: k}
	for i, sg := range segs {
		if sg.Rows%Block != 0 && i < len(segs)-1 {
			return nil, fmt.Errorf("runtime: %s: a segment of %d rows is not whole blocks of %d", name, sg.Rows, Block)
		}
		if err := checkQuantK(k, sg.WT); err != nil {
			return nil, fmt.Errorf("runtime: %s: %w", name, err)
		}
		blockBytes := linearBlockBytes(k, sg.WT)
		perPart := int(d.Limits.MaxStorageBufferBindingSize/blockBytes) * Block
		if perPart < Block {
			l.Release()
			return nil, fmt.Errorf("runtime: one block of %d rows of %s (%d bytes) exceeds the adapter's storage binding limit %d", Block, name, blockBytes, d.Limits.MaxStorageBufferBindingSize)
		}
		for r0 := 0; r0 < sg.Rows; r0 += perPart {
			n := min(perPart, sg.Rows-r0)
			buf, err := d.NewStorage(fmt.Sprintf("%s[%d:%d]", name, l.Rows+r0, l.Rows+r0+n), uint64((n+Block-1)/Block)*blockBytes)
			if err != nil {
				l.Release()
				return nil, fmt.Errorf("allocating %s: %w", name, err)
			}
			l.parts = append(l.parts, linearPart{buf: buf, row0: l.Rows + r0, rows: n, wt: sg.WT})
		}
		l.Rows += sg.Rows
	}
	return l, nil
}

// LinearBytes is the device bytes of a rows x k matrix of type wt, as UploadLinear and the
// quantized loaders lay it out (whole blocks of Block rows, quantized rows in whole chunks).
func LinearBytes(rows, k int, wt wgsl.WeightType) int64 {
	return int64((rows+Block-1)/Block) * int64(linearBlockBytes(k, wt))
}

// linearBlockBytes is the bytes of one block of Block rows of K columns.
func linearBlockBytes(k int, wt wgsl.WeightType) uint64 {
	if wt.Quantized() {
		return uint64(Block * quantRowWords(k, wt) * 4)
	}
	elem, g := 4, GroupK(wt)
	if wt == wgsl.F16 {
		elem = 2
	}
	return uint64(Block * ((k + g - 1) / g) * g * elem)
}

// WriteRows writes rows row0 .. row0 + len(w)/K of the matrix from w (row-major). row0 is a
// multiple of Block, and so is the number of rows unless they end the matrix: the rows a
// block holds are written together.
func (l *Linear) WriteRows(row0 int, w []float32) error {
	return l.writeRows(row0, len(w), wgsl.F32, func(lo, hi int, wt wgsl.WeightType) []byte {
		b := blocked(w[(lo-row0)*l.K:(hi-row0)*l.K], hi-lo, l.K, GroupK(wt))
		if wt != wgsl.F16 {
			return F32Bytes(b)
		}
		raw := make([]byte, 2*len(b))
		for i, f := range b {
			h := weights.F32ToF16(f)
			raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
		}
		return raw
	})
}

// writeRows checks that values (a whole number of rows from row0) are whole blocks and writes
// each part's share, laid out and encoded by encode(lo, hi, type) for the matrix rows lo..hi.
// Float values go to float parts, quantized rows (quant: their type) to parts of their type.
// encode returns a buffer of its own: once written, it goes to encodeBufs for reuse.
func (l *Linear) writeRows(row0, values int, quant wgsl.WeightType, encode func(lo, hi int, wt wgsl.WeightType) []byte) error {
	n := values / l.K
	switch {
	case values%l.K != 0 || row0%Block != 0 || row0 < 0 || row0+n > l.Rows || (n%Block != 0 && row0+n != l.Rows):
		return fmt.Errorf("runtime: rows %d..%d (%d values) of a [%d, %d] matrix: want whole blocks of %d rows", row0, row0+n, values, l.Rows, l.K, Block)
	case n == 0:
		return nil
	}
	for _, p := range l.parts {
		lo, hi := max(row0, p.row0), min(row0+n, p.row0+p.rows)
		if lo >= hi {
			continue
		}
		if p.wt.Quantized() != quant.Quantized() || (quant.Quantized() && p.wt != quant) {
			return fmt.Errorf("runtime: rows %d..%d of the matrix are %v, not %v", lo, hi, p.wt, quant)
		}
		b := encode(lo, hi, p.wt)
		p.buf.Write(uint64((lo-p.row0)/Block)*linearBlockBytes(l.K, p.wt), b) // copies b
		encodeBufs.Put(&b)
	}
	return nil
}

// encodeBufs keeps the byte buffers writeRows has written, for the next chunk of rows: a
// model's load lays out gigabytes a few megabytes at a time, and a fresh buffer each time
// keeps the garbage collector busy.
var encodeBufs sync.Pool

// encodeBuf is a byte buffer of length n from encodeBufs, or a new one; its contents are
// whatever it held.
func encodeBuf(n int) []byte {
	if p, ok := encodeBufs.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n)
}

// WriteRowsF16 is WriteRows for an f16 matrix from IEEE half-precision bits, two little-endian
// bytes a value (a checkpoint stored in F16 goes to the device as its bytes, without a float32
// round trip).
func (l *Linear) WriteRowsF16(row0 int, raw []byte) error {
	return l.writeRows(row0, len(raw)/2, wgsl.F16, func(lo, hi int, wt wgsl.WeightType) []byte {
		rows := raw[2*(lo-row0)*l.K : 2*(hi-row0)*l.K]
		if wt != wgsl.F16 {
			b := make([]float32, (hi-lo)*l.K)
			for i := range b {
				b[i] = weights.F16ToF32(binary.LittleEndian.Uint16(rows[2*i:]))
			}
			return F32Bytes(blocked(b, hi-lo, l.K, GroupK(wt)))
		}
		return blockedF16Bytes(rows, hi-lo, l.K)
	})
}

// blockedF16Bytes is blocked(h, rows, k, 8) for the f16 values h as little-endian bytes (two
// a value), made in one pass of 16-byte copies: a model's f16 weights go through here once at
// load, so it stays a tight loop over whole groups.
func blockedF16Bytes(h []byte, rows, k int) []byte {
	const g, gb = 8, 16 // values and bytes a group
	kg := (k + g - 1) / g
	out := encodeBuf(((rows + Block - 1) / Block) * kg * Block * gb)
	if k%g != 0 || rows%Block != 0 {
		clear(out) // the padding past k and past the last row
	}
	for n := 0; n < rows; n++ {
		row := h[2*n*k : 2*(n+1)*k]
		o := (n/Block)*kg*Block*gb + (n%Block)*gb // byte offset of the row's group 0
		for c := 0; c < 2*k; c += gb {
			copy(out[o:o+gb], row[c:min(c+gb, 2*k)]) // a last partial group leaves zeros past k
			o += Block * gb
		}
	}
	return out
}

// Parts is the number of row parts (storage bindings) the matrix is split into.
func (l *Linear) Parts() int { return len(l.parts) }

// Release frees the device buffers.
func (l *Linear) Release() {
	for _, p := range l.parts {
		p.buf.Release()
	}
	l.parts = nil
}
