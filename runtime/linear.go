package runtime

import (
	"fmt"

	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// Linear is a weight matrix [Rows, K] (Hugging Face [out, in] layout) on the device, in f32 or
// f16, in the blocked layout the matmul and embed kernels read (wgsl/mat_io.wgsl): blocks of 8
// rows, and in each block the k4 = ceil(K/4) vec4s of a row interleaved row by row:
//
//	element (n, k) at (((n/8)*k4 + k/4)*8 + n%8)*4 + k%4, zeros past K and past the last row
//
// so the 8 lanes of a subgroup read 128 contiguous bytes (one row each) at every step. A
// matrix bigger than one storage binding is split into parts of whole blocks.
type Linear struct {
	Rows, K int
	WT      wgsl.WeightType
	parts   []linearPart
}

type linearPart struct {
	buf        *webgpu.Buffer
	row0, rows int
}

// Block is the number of rows interleaved in the weight layout.
const Block = 8

// BlockedLayout returns w ([rows, k] row-major) in the blocked layout, as float32.
func BlockedLayout(w []float32, rows, k int) []float32 {
	k4 := (k + 3) / 4
	blocks := (rows + Block - 1) / Block
	out := make([]float32, blocks*k4*Block*4)
	for n := 0; n < rows; n++ {
		for i := 0; i < k; i++ {
			out[(((n/Block)*k4+i/4)*Block+n%Block)*4+i%4] = w[n*k+i]
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
	blockBytes := linearBlockBytes(k, wt)
	perPart := int(d.Limits.MaxStorageBufferBindingSize/blockBytes) * Block
	if perPart < Block {
		return nil, fmt.Errorf("runtime: one block of %d rows of %s (%d bytes) exceeds the adapter's storage binding limit %d", Block, name, blockBytes, d.Limits.MaxStorageBufferBindingSize)
	}
	l := &Linear{Rows: rows, K: k, WT: wt}
	for r0 := 0; r0 < rows; r0 += perPart {
		n := min(perPart, rows-r0)
		buf, err := d.NewStorage(fmt.Sprintf("%s[%d:%d]", name, r0, r0+n), uint64((n+Block-1)/Block)*blockBytes)
		if err != nil {
			l.Release()
			return nil, fmt.Errorf("allocating %s: %w", name, err)
		}
		l.parts = append(l.parts, linearPart{buf: buf, row0: r0, rows: n})
	}
	return l, nil
}

// linearBlockBytes is the bytes of one block of Block rows of K columns.
func linearBlockBytes(k int, wt wgsl.WeightType) uint64 {
	elem := 4
	if wt == wgsl.F16 {
		elem = 2
	}
	return uint64(Block * ((k + 3) / 4) * 4 * elem)
}

// WriteRows writes rows row0 .. row0 + len(w)/K of the matrix from w (row-major). row0 is a
// multiple of Block, and so is the number of rows unless they end the matrix: the rows a
// block holds are written together.
func (l *Linear) WriteRows(row0 int, w []float32) error {
	n := len(w) / l.K
	switch {
	case len(w)%l.K != 0 || row0%Block != 0 || row0 < 0 || row0+n > l.Rows || (n%Block != 0 && row0+n != l.Rows):
		return fmt.Errorf("runtime: rows %d..%d (%d values) of a [%d, %d] matrix: want whole blocks of %d rows", row0, row0+n, len(w), l.Rows, l.K, Block)
	case n == 0:
		return nil
	}
	blockBytes := linearBlockBytes(l.K, l.WT)
	for _, p := range l.parts {
		lo, hi := max(row0, p.row0), min(row0+n, p.row0+p.rows)
		if lo >= hi {
			continue
		}
		blocked := BlockedLayout(w[(lo-row0)*l.K:(hi-row0)*l.K], hi-lo, l.K)
		var raw []byte
		if l.WT == wgsl.F16 {
			raw = make([]byte, 2*len(blocked))
			for i, f := range blocked {
				h := weights.F32ToF16(f)
				raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
			}
		} else {
			raw = F32Bytes(blocked)
		}
		p.buf.Write(uint64((lo-p.row0)/Block)*blockBytes, raw)
	}
	return nil
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
