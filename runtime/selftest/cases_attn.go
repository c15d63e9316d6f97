package selftest

import (
	"fmt"
	"math"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

const pageSize = 16

// Llama-3's rope scaling (Llama 3.1 8B's constants), on theta 500000.
var llama3 = weights.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192}

// headConfigs are (query heads, kv heads): plain multi-head, grouped, and multi-query.
var ropeHeads = [][2]int{{6, 6}, {4, 2}, {1, 1}}
var attnHeads = [][2]int{{6, 6}, {4, 2}, {8, 1}}

// pageTable maps need logical pages onto need+3 physical ones in a shuffled order.
func (c *checker) pageTable(need int) (table []uint32, nPhys int) {
	nPhys = need + 3
	perm := c.rng.Perm(nPhys)
	if need > 1 && perm[0] < perm[1] {
		perm[0], perm[1] = perm[1], perm[0] // never the identity's order
	}
	table = make([]uint32, need)
	for i := range table {
		table[i] = uint32(perm[i])
	}
	return table, nPhys
}

// cacheIndex is the offset of (position t, kv head h) in a paged cache [pages, page_size, n_kv, hd].
func cacheIndex(table []uint32, t, h, nKV, hd int) int {
	return ((int(table[t/pageSize])*pageSize+t%pageSize)*nKV + h) * hd
}

func ropeCases() []testCase {
	var out []testCase
	for _, l3 := range []bool{false, true} {
		variant := "f32"
		if l3 {
			variant = "f32+LLAMA3"
		}
		for _, h := range ropeHeads {
			for _, hd := range []int{2, 8, 48, 64} {
				for m := 1; m <= 5; m++ {
					out = append(out, testCase{"rope_kv", variant, fmt.Sprintf("heads=%d/%d hd=%d m=%d", h[0], h[1], hd, m), wgsl.F32,
						func(c *checker) { ropeRun(c, l3, h[0], h[1], hd, m) }})
				}
			}
		}
	}
	return out
}

// ropeRun rotates m tokens starting at pos0 (13..15 plus a multiple of 16, so several tokens
// cross a page boundary): q in place in the fused qkv rows (k and v columns unchanged, an
// extra row untouched), k rotated and v copied into their slots of shuffled pages, every other
// slot keeping its poison.
func ropeRun(c *checker, l3 bool, nH, nKV, hd, m int) {
	pos0 := 16*c.rng.Intn(5) + 13 + c.rng.Intn(3)
	width := (nH + 2*nKV) * hd
	qkv := c.uniform((m+1)*width, 1)
	table, nPhys := c.pageTable((pos0+m-1)/pageSize + 1)
	nCache := nPhys * pageSize * nKV * hd
	qkvB, kc, vc := c.f32(qkv), c.poisoned(nCache), c.poisoned(nCache)
	p := runtime.RopeParams{NHeads: uint32(nH), NKV: uint32(nKV), HeadDim: uint32(hd), PageSize: pageSize, Theta: 10000}
	var scaling *weights.RopeScaling
	o := runtime.Overrides{}
	if l3 {
		scaling = &llama3
		o["LLAMA3"] = 1
		p.Theta, p.Factor, p.LowFreq, p.HighFreq = 500000, float32(llama3.Factor), float32(llama3.LowFreqFactor), float32(llama3.HighFreqFactor)
		p.OrigMaxPos = float32(llama3.OriginalMaxPos)
	}
	threads := (nH+nKV)*hd/2 + nKV*hd
	c.dispatch(runtime.StepBlock{M: uint32(m), Pos0: uint32(pos0)}, runtime.KernelCall{Kernel: "rope_kv", Weights: wgsl.F32, Overrides: o, Params: p,
		Buffers: []webgpu.Binding{{Buffer: qkvB}, {Buffer: c.u32(table)}, {Buffer: kc}, {Buffer: vc}},
		Grid:    runtime.Fixed(ceilDiv(threads, 64), uint32(m+1), 1)})

	invFreq := ref.RopeInvFreq(hd, float64(p.Theta), scaling)
	pos := make([]int, m)
	q := make([]float32, m*nH*hd)
	k := make([]float32, m*nKV*hd)
	for r := range pos {
		pos[r] = pos0 + r
		copy(q[r*nH*hd:], qkv[r*width:r*width+nH*hd])
		copy(k[r*nKV*hd:], qkv[r*width+nH*hd:r*width+(nH+nKV)*hd])
	}
	ref.Rope(q, pos, m, nH, hd, invFreq)
	ref.Rope(k, pos, m, nKV, hd, invFreq)
	wantQKV := append([]float32(nil), qkv...)
	wantK, wantV := poisonSlice(nCache), poisonSlice(nCache)
	for r := range pos {
		copy(wantQKV[r*width:], q[r*nH*hd:(r+1)*nH*hd])
		for h := 0; h < nKV; h++ {
			at := cacheIndex(table, pos[r], h, nKV, hd)
			copy(wantK[at:at+hd], k[(r*nKV+h)*hd:])
			copy(wantV[at:at+hd], qkv[r*width+(nH+nKV+h)*hd:])
		}
	}
	t := tolFor("rope_kv", wgsl.F32)
	c.expect("qkv", c.readF32(qkvB, len(qkv)), wantQKV, t)
	c.expect("k_cache", c.readF32(kc, nCache), wantK, t)
	c.expect("v_cache", c.readF32(vc, nCache), wantV, t)
}

func attentionCases() []testCase {
	var out []testCase
	for _, kernel := range []string{"attention", "attention_wg"} {
		for _, h := range attnHeads {
			for _, hd := range []int{8, 48, 64, 128} {
				for _, T := range []int{1, 7, 33, 300} {
					for m := 1; m <= min(5, T); m++ {
						for _, rows := range []int{1, 3, 8} {
							if kernel == "attention_wg" && rows > 1 || rows*hd/4 > 64 || (rows > 1 && rows != m && m != 5) {
								continue
							}
							size := fmt.Sprintf("heads=%d/%d hd=%d T=%d m=%d", h[0], h[1], hd, T, m)
							if kernel == "attention" {
								size += fmt.Sprintf(" rows=%d", rows)
							}
							out = append(out, testCase{kernel, "f32", size, wgsl.F32,
								func(c *checker) { attentionRun(c, kernel, h[0], h[1], hd, T, m, rows) }})
						}
					}
				}
			}
		}
	}
	return out
}

// attentionRun attends m new tokens (the last m of T positions) over a paged cache whose
// pages are shuffled and whose slots past T hold poison (a kernel reading them yields NaN),
// with q read from fused qkv rows of stride (nH + 2 nKV) hd. The output has an extra row
// (dispatched too) that must keep its poison.
func attentionRun(c *checker, kernel string, nH, nKV, hd, T, m, rows int) {
	if kernel == "attention" && !c.d.UseSubgroups() {
		c.skip("the adapter has no subgroups (attention_wg covers it)")
		return
	}
	pos0 := T - m
	stride := (nH + 2*nKV) * hd
	qkv := c.uniform(m*stride, 2)
	table, nPhys := c.pageTable((T + pageSize - 1) / pageSize)
	nCache := nPhys * pageSize * nKV * hd
	kc, vc := poisonSlice(nCache), poisonSlice(nCache)
	kLog, vLog := c.uniform(T*nKV*hd, 1), c.uniform(T*nKV*hd, 1) // [T, nKV, hd]
	for t := 0; t < T; t++ {
		for h := 0; h < nKV; h++ {
			at := cacheIndex(table, t, h, nKV, hd)
			copy(kc[at:at+hd], kLog[(t*nKV+h)*hd:])
			copy(vc[at:at+hd], vLog[(t*nKV+h)*hd:])
		}
	}
	outN := nH * hd
	out := c.poisoned((m + 1) * outN)
	grid := runtime.Fixed(uint32(nH), uint32(m+1), 1)
	var o runtime.Overrides
	if kernel == "attention" { // one subgroup per (block of rows rows, head): a workgroup each
		o = runtime.Overrides{"WG": float64(c.d.Adapter.Info.SubgroupMax), "ROWS": float64(rows)}
		grid = runtime.Fixed(uint32(nH)*ceilDiv(m+1, rows), 1, 1)
	}
	c.dispatch(runtime.StepBlock{M: uint32(m), Pos0: uint32(pos0)}, runtime.KernelCall{Kernel: kernel, Weights: wgsl.F32, Overrides: o,
		Params: runtime.AttnParams{NHeads: uint32(nH), NKV: uint32(nKV), HeadDim: uint32(hd), PageSize: pageSize,
			QStride: uint32(stride), Scale: float32(1 / math.Sqrt(float64(hd)))},
		Buffers: []webgpu.Binding{{Buffer: c.f32(qkv)}, {Buffer: c.u32(table)}, {Buffer: c.f32(kc)},
			{Buffer: c.f32(vc)}, {Buffer: out}},
		Grid: grid})

	q := make([]float32, m*outN)
	pos := make([]int, m)
	for r := range pos {
		pos[r] = pos0 + r
		copy(q[r*outN:], qkv[r*stride:r*stride+outN])
	}
	want := append(ref.Attention(q, kLog, vLog, pos, m, T, nH, nKV, hd), poisonSlice(outN)...)
	c.expect("out", c.readF32(out, len(want)), want, tolFor("attention", wgsl.F32))
}
