package selftest

import (
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// qkNormCases: Qwen3's per-head norm of q and k, on head widths below, at and above the
// workgroup's 64 lanes, with and without grouped-query attention.
func qkNormCases() []testCase {
	var out []testCase
	for _, h := range [][2]int{{1, 1}, {4, 2}, {6, 2}} {
		for _, hd := range []int{2, 24, 66, 128, 256} {
			for _, m := range []int{1, 3} {
				tc := newCase("qk_norm", "f32", fmt.Sprintf("heads=%d/%d hd=%d m=%d", h[0], h[1], hd, m), wgsl.F32,
					func(c *checker) { qkNormRun(c, h[0], h[1], hd, m) })
				if m == 3 && hd != 66 { // the quick tier: one token everywhere, three at hd 66
					tc = fullOnly(tc)
				}
				out = append(out, tc)
			}
		}
	}
	return out
}

// qkNormRun normalizes the q and k heads of m fused qkv rows in place; the v columns and an
// extra row (dispatched too: the grid covers m + 1 rows and one head more) keep their values.
func qkNormRun(c *checker, nH, nKV, hd, m int) {
	width := (nH + 2*nKV) * hd
	x := c.uniform((m+1)*width, 3)
	w := c.uniform(2*hd, 0.5)
	for i := range w {
		w[i]++
	}
	qkv := c.f32(x)
	c.dispatch(runtime.StepBlock{M: uint32(m)}, runtime.KernelCall{Kernel: "qk_norm",
		Params:  runtime.QKNormParams{NHeads: uint32(nH), NKV: uint32(nKV), HeadDim: uint32(hd), Eps: eps},
		Buffers: []webgpu.Binding{{Buffer: qkv}, {Buffer: c.f32(w)}},
		Grid:    runtime.Fixed(uint32(nH+nKV+1), uint32(m+1), 1)})
	want := append([]float32(nil), x...)
	for r := 0; r < m; r++ {
		row := want[r*width : (r+1)*width]
		copy(row, kernelref.RMSNorm(row[:nH*hd], w[:hd], nH, hd, eps))
		copy(row[nH*hd:], kernelref.RMSNorm(row[nH*hd:(nH+nKV)*hd], w[hd:], nKV, hd, eps))
	}
	c.expect("qkv", c.readF32(qkv, len(want)), want, tolFor("qk_norm", wgsl.F32))
}
