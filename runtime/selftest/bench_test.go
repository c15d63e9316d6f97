package selftest

import (
	"math/rand"
	"testing"
	"time"

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
func benchWeights(b *testing.B, d *runtime.Device, n int, scale float64, wt wgsl.WeightType) *webgpu.Buffer {
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

func benchStorage(b *testing.B, d *runtime.Device, n int) *webgpu.Buffer {
	b.Helper()
	buf, err := d.NewStorage("bench", uint64(4*n))
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

// matCall is a plain (unfused) matvec or matmul y[m, n] = x[m, :] . w[n, :], with weight rows
// stride elements apart (k, or k padded as runtime.UploadLinear pads power-of-two widths).
func matCall(b *testing.B, d *runtime.Device, kernel string, wt wgsl.WeightType, m, n, k, stride int) (runtime.KernelCall, []*webgpu.Buffer) {
	w := benchWeights(b, d, n*stride, 0.02, wt)
	x := benchWeights(b, d, m*k, 1, wgsl.F32)
	small := benchStorage(b, d, max(n, k))
	y := benchStorage(b, d, m*n)
	grid := runtime.Fixed(ceilDiv(n, 64), 1, 1)
	if kernel == "matmul" {
		grid = runtime.Fixed(ceilDiv(n, 64), ceilDiv(m, 16), 1)
	}
	call := runtime.KernelCall{Kernel: kernel, Weights: wt,
		Params:  runtime.MatParams{N: uint32(n), K: uint32(k), Eps: eps, YStride: uint32(n), WStride: uint32(stride)},
		Buffers: []webgpu.Binding{{Buffer: x}, {Buffer: w}, {Buffer: small}, {Buffer: small}, {Buffer: y}},
		Grid:    grid}
	return call, []*webgpu.Buffer{w, x, small, y}
}

func release(bufs []*webgpu.Buffer) {
	for _, b := range bufs {
		b.Release()
	}
}

// strides are the weight row strides benchmarked: packed, and padded by 64 bytes as
// runtime.UploadLinear lays out rows whose bytes are a multiple of 1 KiB.
func strides(k int, wt wgsl.WeightType) map[string]int {
	elem := 4
	if wt == wgsl.F16 {
		elem = 2
	}
	return map[string]int{"packed": k, "padded": k + 64/elem}
}

// BenchmarkMatvec4096 is the decode shape: one row times a 4096 x 4096 weight, 8 dispatches
// per submit so that the submit's own cost is shared; GB/s counts weight bytes read. matvec4
// (vec4 weight loads) is what the model uses for K % 4 == 0.
func BenchmarkMatvec4096(b *testing.B) {
	const n, perSubmit = 4096, 8
	d := testDevice(b)
	for _, kernel := range []string{"matvec", "matvec4"} {
		for _, wt := range weightTypes {
			for _, layout := range []string{"packed", "padded"} {
				b.Run(kernel+"/"+wt.String()+"/"+layout, func(b *testing.B) {
					call, bufs := matCall(b, d, kernel, wt, 1, n, n, strides(n, wt)[layout])
					defer release(bufs)
					p := benchProgram(b, d, call, perSubmit)
					per := runTimed(b, d, p, runtime.StepBlock{M: 1}) / perSubmit
					bytes := float64(n * n * 4)
					if wt == wgsl.F16 {
						bytes /= 2
					}
					b.ReportMetric(bytes/per.Seconds()/1e9, "GB/s")
					b.ReportMetric(per.Seconds()*1e3, "ms/matvec")
				})
			}
		}
	}
}

// BenchmarkMatmul1024 is 1024 x 1024 x 1024 (the prefill shape, 2.1 GFLOP per dispatch).
func BenchmarkMatmul1024(b *testing.B) {
	const n = 1024
	d := testDevice(b)
	for _, wt := range weightTypes {
		for _, layout := range []string{"packed", "padded"} {
			b.Run(wt.String()+"/"+layout, func(b *testing.B) {
				call, bufs := matCall(b, d, "matmul", wt, n, n, n, strides(n, wt)[layout])
				defer release(bufs)
				p := benchProgram(b, d, call, 1)
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
