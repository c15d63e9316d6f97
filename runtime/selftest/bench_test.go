package selftest

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/quant"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// Benchmarks of the kernels that bound decode (matvec: weight bandwidth), prefill (matmul:
// FLOP/s) and everything small (the cost of one dispatch). Run them with
//
//	go test ./runtime/selftest/ -run '^$' -bench . -benchtime 3x -count 3
//
// BENCHMARKS.md records the medians next to the lavapipe reference figures.

// benchProgram records n copies of call in one program (one compute pass, one submit).
func benchProgram(b *testing.B, d *runtime.Device, call runtime.KernelCall, n int) *runtime.Program {
	b.Helper()
	p, err := d.NewProgram()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := p.Add(call); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

// runTimed runs p once untimed (pipelines warm, pages touched), then b.N times, each submit
// waited for, and returns the time per run.
func runTimed(b *testing.B, d *runtime.Device, p *runtime.Program, step runtime.StepBlock) time.Duration {
	b.Helper()
	run := func() {
		if err := p.Run(&step); err != nil {
			b.Fatal(err)
		}
		if err := d.WaitIdle(); err != nil {
			b.Fatal(err)
		}
	}
	run()
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		run()
	}
	el := time.Since(t0)
	b.StopTimer()
	return el / time.Duration(b.N)
}

// benchWeights uploads n random weights in [-scale, scale) as wt.
func benchWeights(b testing.TB, d *runtime.Device, n int, scale float64, wt wgsl.WeightType) *webgpu.Buffer {
	b.Helper()
	rng := rand.New(rand.NewSource(1))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((2*rng.Float64() - 1) * scale)
	}
	var buf *webgpu.Buffer
	var err error
	if wt == wgsl.F16 {
		raw, _ := toF16(v)
		buf, err = d.UploadBytes("bench w", raw)
	} else {
		buf, err = d.UploadF32("bench w", v)
	}
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

func benchStorage(b testing.TB, d *runtime.Device, n int) *webgpu.Buffer {
	b.Helper()
	buf, err := d.NewStorage("bench", uint64(4*n))
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

func release(bufs []*webgpu.Buffer) {
	for _, b := range bufs {
		b.Release()
	}
}

// matProgram is perSubmit copies of y[m, n] = x[m, :] . w[n, :] in one program, recorded as
// the model records its matmuls (runtime.AddMat: its layout, kernel and workgroup shape),
// blocks of rows rows.
func matProgram(b *testing.B, d *runtime.Device, wt wgsl.WeightType, m, n, k, rows, perSubmit int) (*runtime.Program, []*webgpu.Buffer) {
	w, bufs := matOperands(b, d, wt, m, n, k)
	p := benchProgram(b, d, runtime.KernelCall{}, 0)
	for i := 0; i < perSubmit; i++ {
		if err := p.AddMat("bench", w, bufs[0], bufs[1], n, runtime.MatFusion{}, rows, bufs[2]); err != nil {
			b.Fatal(err)
		}
	}
	return p, bufs
}

// matOperands is a random [n, k] weight of type wt (released when the benchmark ends) and the
// buffers x [m, k], y [m, n] and a dummy binding.
func matOperands(b *testing.B, d *runtime.Device, wt wgsl.WeightType, m, n, k int) (*runtime.Linear, []*webgpu.Buffer) {
	rng := rand.New(rand.NewSource(1))
	v := make([]float32, n*k)
	for i := range v {
		v[i] = float32((2*rng.Float64() - 1) * 0.02)
	}
	w, err := uploadBench(d, v, n, k, wt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Release)
	x := benchWeights(b, d, m*k, 1, wgsl.F32)
	y, dummy := benchStorage(b, d, m*n), benchStorage(b, d, 4)
	return w, []*webgpu.Buffer{x, y, dummy}
}

// uploadBench puts v ([n, k]) on the device as type wt, quantized first for a quantized type.
func uploadBench(d *runtime.Device, v []float32, n, k int, wt wgsl.WeightType) (*runtime.Linear, error) {
	if !wt.Quantized() {
		return d.UploadLinear("bench w", v, n, k, wt)
	}
	raw, err := quant.Quantize(gguf.TensorType(wt.GGML()), v)
	if err != nil {
		return nil, err
	}
	w, err := d.NewLinear("bench w", n, k, wt)
	if err == nil {
		err = w.WriteRowsQuant(0, wt, raw)
	}
	return w, err
}

// BenchmarkMatvec4096 is the decode shape: one row times a 4096 x 4096 weight, 8 dispatches
// per submit so that the submit's own cost is shared; GB/s counts weight bytes read. "wg" is
// the kernel without subgroups; the quantized types have one kernel (matmul_q).
func BenchmarkMatvec4096(b *testing.B) {
	const n, perSubmit = 4096, 8
	d := testDevice(b)
	for _, sg := range []bool{true, false} {
		types := weightTypes
		if sg {
			types = append(types, wgsl.Q8_0, wgsl.Q4_0, wgsl.Q4_K, wgsl.Q5_K, wgsl.Q6_K)
		}
		for _, wt := range types {
			name := wt.String()
			if !sg {
				name += "/wg"
			}
			b.Run(name, func(b *testing.B) {
				d.ForceNoSubgroups = !sg
				defer func() { d.ForceNoSubgroups = false }()
				p, bufs := matProgram(b, d, wt, 1, n, n, 1, perSubmit)
				defer release(bufs)
				per := runTimed(b, d, p, runtime.StepBlock{M: 1}) / perSubmit
				reportMatvec(b, wt, n, per)
			})
		}
	}
}

// reportMatvec reports an n x n mat-vec of type wt that took per: the weight bytes it read a
// second (GB/s) and its time.
func reportMatvec(b *testing.B, wt wgsl.WeightType, n int, per time.Duration) {
	bytes := float64(n * n * 4)
	switch {
	case wt == wgsl.F16:
		bytes /= 2
	case wt.Quantized():
		rb, _ := gguf.TensorType(wt.GGML()).RowBytes(uint64(n))
		bytes = float64(n) * float64(rb)
	}
	b.ReportMetric(bytes/per.Seconds()/1e9, "GB/s")
	b.ReportMetric(per.Seconds()*1e3, "ms/matvec")
}

// BenchmarkMatvecDRAM is BenchmarkMatvec4096 over 16 different 4096 x 4096 weights in turn
// (512 MiB in f16, 1 GiB in f32): a model's decode step reads weights from memory, not from
// the CPU's last-level cache, where one 4096² matrix (32 MiB in f16) can stay between runs.
func BenchmarkMatvecDRAM(b *testing.B) {
	const n, mats = 4096, 16
	d := testDevice(b)
	for _, wt := range []wgsl.WeightType{wgsl.F32, wgsl.F16, wgsl.Q4_K} {
		b.Run(wt.String(), func(b *testing.B) {
			p := benchProgram(b, d, runtime.KernelCall{}, 0)
			var bufs []*webgpu.Buffer
			for i := 0; i < mats; i++ {
				w, bi := matOperands(b, d, wt, 1, n, n)
				bufs = append(bufs, bi...)
				if err := p.AddMat("bench", w, bi[0], bi[1], n, runtime.MatFusion{}, 1, bi[2]); err != nil {
					b.Fatal(err)
				}
			}
			defer release(bufs)
			per := runTimed(b, d, p, runtime.StepBlock{M: 1}) / mats
			reportMatvec(b, wt, n, per)
		})
	}
}

// BenchmarkMatmul1024 is 1024 x 1024 x 1024 (2.1 GFLOP per dispatch), the prefill shape, in
// blocks of 8 and 16 rows.
func BenchmarkMatmul1024(b *testing.B) {
	const n = 1024
	d := testDevice(b)
	for _, wt := range weightTypes {
		for _, rows := range []int{8, 16} {
			b.Run(fmt.Sprintf("%v/rows=%d", wt, rows), func(b *testing.B) {
				p, bufs := matProgram(b, d, wt, n, n, n, rows, 1)
				defer release(bufs)
				per := runTimed(b, d, p, runtime.StepBlock{M: n})
				b.ReportMetric(2*n*n*n/per.Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(per.Seconds()*1e3, "ms/matmul")
			})
		}
	}
}

// BenchmarkDispatchOverhead is 100 near-empty dispatches (embed of one float) per submit:
// the fixed cost of a dispatch, which bounds how many a token can afford.
func BenchmarkDispatchOverhead(b *testing.B) {
	const perSubmit = 100
	d := testDevice(b)
	tok := benchStorage(b, d, 1)
	table := benchWeights(b, d, 1, 1, wgsl.F32)
	x := benchStorage(b, d, 1)
	defer release([]*webgpu.Buffer{tok, table, x})
	call := runtime.KernelCall{Kernel: "embed", Weights: wgsl.F32,
		Params:  runtime.EmbedParams{Dim: 1, Rows: 1},
		Buffers: []webgpu.Binding{{Buffer: tok}, {Buffer: table}, {Buffer: x}},
		Grid:    runtime.Fixed(1, 1, 1)}
	p := benchProgram(b, d, call, perSubmit)
	per := runTimed(b, d, p, runtime.StepBlock{M: 1})
	b.ReportMetric(float64(per.Nanoseconds())/perSubmit/1e3, "us/dispatch")
}

// BenchmarkMatmulStories is the model's matmul (runtime.AddMat: the kernel, layout and
// workgroup shape the model uses) on stories15M's shapes, for a decode step (1 row) and the
// verify steps of k = 4 and 8 (5 and 9 rows); the shapes and row counts take turns.
func BenchmarkMatmulStories(b *testing.B) {
	d := testDevice(b)
	shapes := []struct {
		name string
		n, k int
		f    runtime.MatFusion
	}{
		{"lm_head", 32000, 288, runtime.MatFusion{}}, {"qkv", 864, 288, runtime.MatFusion{}},
		{"wo", 288, 288, runtime.MatFusion{Accum: true}}, {"w13", 1536, 288, runtime.MatFusion{}},
		{"w2", 288, 768, runtime.MatFusion{SwiGLU: true, Accum: true}},
	}
	type run struct {
		name  string
		p     *runtime.Program
		step  runtime.StepBlock
		times []time.Duration
	}
	var runs []*run
	for _, sh := range shapes {
		w, err := d.UploadLinear("w", make([]float32, sh.n*sh.k), sh.n, sh.k, wgsl.F32)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Release()
		in := sh.k
		if sh.f.SwiGLU {
			in *= 2
		}
		x, y, dummy := benchStorage(b, d, 16*in), benchStorage(b, d, 16*sh.n), benchStorage(b, d, 4)
		defer release([]*webgpu.Buffer{x, y, dummy})
		for _, rows := range []int{1, 5, 9} {
			p, err := d.NewProgram()
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 8; i++ {
				if err := p.AddMat(sh.name, w, x, y, sh.n, sh.f, rows, dummy); err != nil {
					b.Fatal(err)
				}
			}
			runs = append(runs, &run{name: fmt.Sprintf("%s/rows=%d", sh.name, rows), p: p, step: runtime.StepBlock{M: uint32(rows)}})
		}
	}
	for i := 0; i < 10*b.N; i++ {
		for _, r := range runs {
			r.times = append(r.times, runTimedOnce(b, d, r.p, r.step)/8)
		}
	}
	for _, r := range runs {
		b.ReportMetric(float64(runtime.Median(r.times).Microseconds())/1000, "ms:"+r.name)
	}
}

// runTimedOnce runs p once and waits for it.
func runTimedOnce(b *testing.B, d *runtime.Device, p *runtime.Program, step runtime.StepBlock) time.Duration {
	t0 := time.Now()
	if err := p.Run(&step); err != nil {
		b.Fatal(err)
	}
	if err := d.WaitIdle(); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}
