package runtime

import (
	"fmt"
	"strings"

	"github.com/wspec/wspec/runtime/webgpu"
)

// MatFusion selects the fusions of a matmul dispatch (wgsl/mat_io.wgsl).
type MatFusion struct {
	Norm     *webgpu.Buffer // RMSNorm weight [K] applied to the input (nil: none)
	Eps      float32
	SwiGLU   bool           // the input is [gate | up], 2K wide
	GeGLU    bool           // with SwiGLU: gelu_tanh(gate) * up instead of silu (Gemma)
	Bias     *webgpu.Buffer // [Rows] (nil: none)
	SiLU     bool           // silu(W x + b), before Accum (Medusa's residual blocks)
	Accum    bool           // y += W x (residual add)
	LastRows bool           // only the last n_draft + 1 input rows
	Gather   *webgpu.Buffer // only the input rows it lists ([Step.LogitRows] u32), written as rows 0..
	// Keep, when set, also receives each stored row: Keep[r, KeepOff + col] (stride
	// KeepStride floats), as copy_rows would after the dispatch. Not with LastRows or Gather.
	Keep                *webgpu.Buffer
	KeepStride, KeepOff int
}

// MaxBlockRows is the most rows one matmul invocation holds in registers (MAXR in the kernel).
const MaxBlockRows = 16

// matWG is the largest matmul workgroup: a multiple of every subgroup size UseSubgroups accepts.
const matWG = 64

// UseSubgroups reports whether the kernels' subgroup paths run on this device: the feature is
// there, subgroups divide a workgroup of 64, and ForceNoSubgroups is off.
func (d *Device) UseSubgroups() bool {
	s := d.Adapter.Info.SubgroupMax
	return d.HasSubgroups && !d.ForceNoSubgroups && s >= 4 && s <= matWG && s&(s-1) == 0
}

// UseQuantSubgroups reports whether the quantized mat-vec runs its subgroup kernel
// (matmul_q_sg): subgroups as UseSubgroups, of at least 8 lanes (a group of 32 values is 8
// lanes' vec4s).
func (d *Device) UseQuantSubgroups() bool {
	return d.UseSubgroups() && d.Adapter.Info.SubgroupMin >= 8
}

// MatCols is the columns per invocation matmul kernel gives a block of rows rows: 4 (each
// input value fetched once serves 4 weights); the quantized kernels hold a chunk of 9-17
// vec4s of weights per column in registers, and take 2, but matmul_q_sg takes 4 for one row
// (the 4096² mat-vec decodes about 9% faster on lavapipe, and such a pipeline takes twice as
// long to compile, so only the decode step, the one that runs most, has them).
func MatCols(kernel string, rows int) int {
	switch {
	case kernel == "matmul_q_sg" && rows == 1:
		return 4
	case kernel == "matmul_q" || kernel == "matmul_q_sg":
		return 2
	}
	return 4
}

// matWorkgroup is the workgroup size for a matrix of n rows at cols columns per invocation:
// as large as keeps at least 8 workgroups (two CPU threads stay busy and balanced; a GPU gets
// one per few cores) without computing more than an eighth of padding columns, and at least
// the subgroup size (and 64 without subgroups).
func (d *Device) matWorkgroup(n, cols int) int {
	minWG := matWG
	if d.UseSubgroups() {
		minWG = int(max(d.Adapter.Info.SubgroupMax, 8))
	}
	for w := matWG; w > minWG; w /= 2 {
		per := w * cols
		groups := (n + per - 1) / per
		if groups >= 8 && groups*per-n <= n/8 {
			return w
		}
	}
	return minWG
}

// AddMat records y = W xin (with fusions) for the step's rows into program p: one dispatch per
// part of W (matmul_q_sg or matmul_q for a quantized part), each invocation computing a block of rows x a few columns. rows (1..MaxBlockRows)
// is the block's height: 1 for decoding, the verified rows for a verify step, more for a
// prefill, whose rows then go in several blocks (grid.y).
func (p *Program) AddMat(name string, w *Linear, x, y *webgpu.Buffer, yStride int, f MatFusion, rows int, dummy *webgpu.Buffer) error {
	if rows < 1 || rows > MaxBlockRows {
		return fmt.Errorf("runtime: %s: %d rows per block, want 1..%d", name, rows, MaxBlockRows)
	}
	if f.Keep != nil && (f.LastRows || f.Gather != nil) {
		panic(fmt.Sprintf("runtime: %s: Keep with LastRows or Gather", name))
	}
	o := Overrides{"ROWS": float64(rows)}
	for key, on := range map[string]bool{"NORM": f.Norm != nil, "SWIGLU": f.SwiGLU, "GEGLU": f.GeGLU, "HAS_BIAS": f.Bias != nil,
		"SILU": f.SiLU, "ACCUM": f.Accum, "LAST_ROWS": f.LastRows, "GATHER": f.Gather != nil, "KEEP": f.Keep != nil} {
		if on {
			o[key] = 1
		}
	}
	norm, bias, sel := orDummy(f.Norm, dummy), orDummy(f.Bias, dummy), orDummy(f.Gather, dummy)
	keep := f.Keep
	if keep == nil {
		var err error
		if keep, err = p.d.Sink(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, part := range w.parts {
		n := uint32(part.rows)
		kernel := "matmul_wg"
		switch {
		case part.wt.Quantized() && p.d.UseQuantSubgroups():
			kernel = "matmul_q_sg"
		case part.wt.Quantized():
			kernel = "matmul_q"
		case p.d.UseSubgroups():
			kernel = "matmul"
		}
		cols := MatCols(kernel, rows)
		wg := p.d.matWorkgroup(part.rows, cols)
		if kernel == "matmul_q" {
			wg = matWG // its workgroup stages each chunk of 64 vec4s
		}
		po := Overrides{"COLS": float64(cols), "WG": float64(wg)}
		for k, v := range o {
			po[k] = v
		}
		po["ROWS"] = float64(MatRowsOverride(kernel, rows))
		lastRows, gather, perWG, r := f.LastRows, f.Gather != nil, uint32(wg*cols), uint32(rows)
		grid := func(s *StepBlock) (uint32, uint32, uint32) {
			m := s.M
			switch {
			case lastRows:
				m = min(s.NDraft+1, s.M)
			case gather:
				m = s.LogitRows
			}
			return CeilDiv(n, perWG), CeilDiv(m, r), 1
		}
		err := p.Add(KernelCall{
			Kernel: kernel, Label: name[strings.LastIndex(name, ".")+1:], Weights: part.wt, Overrides: po,
			Params: MatParams{N: n, K: uint32(w.K), Eps: f.Eps, Col0: uint32(part.row0), YStride: uint32(yStride),
				KeepStride: uint32(f.KeepStride), KeepOff: uint32(f.KeepOff), BlockRows: uint32(rows)},
			Buffers: []webgpu.Binding{{Buffer: x}, {Buffer: part.buf}, {Buffer: bias}, {Buffer: norm}, {Buffer: y}, {Buffer: sel}, {Buffer: keep}},
			Grid:    grid,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// MatRowsOverride is the ROWS override of a matmul kernel for blocks of rows rows: rows, but
// matmul_q_sg has one pipeline per fusion for every height above one (MaxBlockRows; the
// height travels in MatParams.BlockRows). Its rows are a loop either way, and each of its
// pipelines takes seconds to compile on a CPU adapter, where the 7 heights of decode, verify
// and prefill steps cost an engine a minute at first use.
func MatRowsOverride(kernel string, rows int) int {
	if kernel == "matmul_q_sg" && rows > 1 {
		return MaxBlockRows
	}
	return rows
}

func orDummy(b, dummy *webgpu.Buffer) *webgpu.Buffer {
	if b == nil {
		return dummy
	}
	return b
}
