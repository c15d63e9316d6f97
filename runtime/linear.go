package runtime

import (
	"fmt"

	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// Linear is a weight matrix [Rows, K] (Hugging Face [out, in] layout) on the device, in f32 or
// f16, split by rows into parts that each fit one storage binding.
type Linear struct {
	Rows, K int
	Stride  int // row stride in elements: K, padded by 64 bytes where K's bytes are a multiple of 1 KiB
	WT      wgsl.WeightType
	parts   []linearPart
}

type linearPart struct {
	buf        *webgpu.Buffer
	row0, rows int
}

// UploadLinear copies w ([rows, k]) to the device in weight type wt.
func (d *Device) UploadLinear(name string, w []float32, rows, k int, wt wgsl.WeightType) (*Linear, error) {
	if len(w) != rows*k {
		return nil, fmt.Errorf("runtime: %s has %d values, want %d x %d", name, len(w), rows, k)
	}
	elem := 4
	if wt == wgsl.F16 {
		elem = 2
	}
	// Rows whose byte stride is a multiple of 1 KiB (K = 1024, 2048, 4096, ...) make the
	// register-blocked matmul read rows that alias in CPU caches (half speed on lavapipe at
	// K = 1024): pad them by 64 bytes, which keeps vec4 alignment.
	stride := k
	if (k*elem)%1024 == 0 {
		stride += 64 / elem
	}
	rowBytes := uint64(stride * elem)
	perPart := int(d.Limits.MaxStorageBufferBindingSize / rowBytes)
	if perPart < 1 {
		return nil, fmt.Errorf("runtime: one row of %s (%d bytes) exceeds the adapter's storage binding limit %d", name, rowBytes, d.Limits.MaxStorageBufferBindingSize)
	}
	l := &Linear{Rows: rows, K: k, Stride: stride, WT: wt}
	for r0 := 0; r0 < rows; r0 += perPart {
		n := min(perPart, rows-r0)
		chunk := w[r0*k : (r0+n)*k]
		if stride != k {
			padded := make([]float32, n*stride)
			for r := 0; r < n; r++ {
				copy(padded[r*stride:r*stride+k], chunk[r*k:(r+1)*k])
			}
			chunk = padded
		}
		var raw []byte
		if wt == wgsl.F16 {
			raw = make([]byte, 2*len(chunk))
			for i, f := range chunk {
				h := weights.F32ToF16(f)
				raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
			}
		} else {
			raw = F32Bytes(chunk)
		}
		buf, err := d.UploadBytes(fmt.Sprintf("%s[%d:%d]", name, r0, r0+n), raw)
		if err != nil {
			return nil, fmt.Errorf("uploading %s: %w", name, err)
		}
		l.parts = append(l.parts, linearPart{buf: buf, row0: r0, rows: n})
	}
	return l, nil
}

// Parts is the number of row parts (storage bindings) the matrix is split into.
func (l *Linear) Parts() int { return len(l.parts) }

// Release frees the device buffers.
func (l *Linear) Release() {
	for _, p := range l.parts {
		p.buf.Release()
	}
}

// MatFusion selects the fusions of a matvec/matmul dispatch.
type MatFusion struct {
	Norm     *webgpu.Buffer // RMSNorm weight [K] applied to the input (nil: none)
	Eps      float32
	SwiGLU   bool           // the input is [gate | up], 2K wide
	Bias     *webgpu.Buffer // [Rows] (nil: none)
	SiLU     bool           // silu(W x + b), before Accum (Medusa's residual blocks; matvec only)
	Accum    bool           // y += W x (residual add)
	LastRows bool           // only the last n_draft + 1 input rows
}

// AddMat records y = W xin (with fusions) into program p: one dispatch per part of W. With
// tiled, the register-blocked matmul (many rows); otherwise the matvec (at most 16 rows).
func (p *Program) AddMat(name string, w *Linear, x, y *webgpu.Buffer, yStride int, f MatFusion, tiled bool, dummy *webgpu.Buffer) error {
	o := Overrides{}
	if f.Norm != nil {
		o["NORM"] = 1
	}
	if f.SwiGLU {
		o["SWIGLU"] = 1
	}
	if f.Bias != nil {
		o["HAS_BIAS"] = 1
	}
	if f.Accum {
		o["ACCUM"] = 1
	}
	if f.SiLU {
		o["SILU"] = 1
	}
	if f.LastRows {
		o["LAST_ROWS"] = 1
	}
	kernel := "matvec"
	if tiled {
		kernel = "matmul"
		if f.SiLU {
			return fmt.Errorf("runtime: %s: SILU is a matvec fusion", name)
		}
	} else if w.K%4 == 0 {
		kernel = "matvec4"
	}
	norm, bias := orDummy(f.Norm, dummy), orDummy(f.Bias, dummy)
	for _, part := range w.parts {
		rows := uint32(part.rows)
		grid := func(s *StepBlock) (uint32, uint32, uint32) { return CeilDiv(rows, 64), 1, 1 }
		if tiled {
			lastRows := f.LastRows
			grid = func(s *StepBlock) (uint32, uint32, uint32) {
				m := s.M
				if lastRows {
					m = min(s.NDraft+1, s.M)
				}
				return CeilDiv(rows, 64), CeilDiv(m, 16), 1
			}
		}
		err := p.Add(KernelCall{
			Kernel: kernel, Weights: w.WT, Overrides: o,
			Params:  MatParams{N: rows, K: uint32(w.K), Eps: f.Eps, Col0: uint32(part.row0), YStride: uint32(yStride), WStride: uint32(w.Stride)},
			Buffers: []webgpu.Binding{{Buffer: x}, {Buffer: part.buf}, {Buffer: bias}, {Buffer: norm}, {Buffer: y}},
			Grid:    grid,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func orDummy(b, dummy *webgpu.Buffer) *webgpu.Buffer {
	if b == nil {
		return dummy
	}
	return b
}
