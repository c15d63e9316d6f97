package selftest

import (
	"fmt"
	"math"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/kernelref"
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

// pageTables maps each sequence's needs[s] logical pages onto distinct physical pages among
// sum(needs)+3, in a shuffled order.
func (c *checker) pageTables(needs []int) (tables [][]uint32, nPhys int) {
	total := 0
	for _, n := range needs {
		total += n
	}
	nPhys = total + 3
	perm := c.rng.Perm(nPhys)
	if total > 1 && perm[0] < perm[1] {
		perm[0], perm[1] = perm[1], perm[0] // never the identity's order
	}
	for _, n := range needs {
		t := make([]uint32, n)
		for i := range t {
			t[i] = uint32(perm[i])
		}
		perm = perm[n:]
		tables = append(tables, t)
	}
	return tables, nPhys
}

// batchBuffers are a batched step's RowInfo, SeqInfo (page tables at s * maxPages) and page
// tables for the rows rowSeq[r] / rowPos[r].
func (c *checker) batchBuffers(rowSeq, rowPos []int, tables [][]uint32, maxPages int) (rows, seqs, pages *webgpu.Buffer) {
	ri := make([]runtime.RowInfo, len(rowSeq))
	for r := range ri {
		ri[r] = runtime.RowInfo{Seq: uint32(rowSeq[r]), Pos: uint32(rowPos[r])}
	}
	si := make([]runtime.SeqInfo, len(tables))
	flat := make([]uint32, len(tables)*maxPages)
	for s, t := range tables {
		si[s].PageOff = uint32(s * maxPages)
		copy(flat[s*maxPages:], t)
	}
	return c.keep(c.d.UploadBytes("rows", runtime.SliceBytes(ri))), c.keep(c.d.UploadBytes("seqs", runtime.SliceBytes(si))), c.u32(flat)
}

// dummy is a buffer standing in for the bindings a variant does not read.
func (c *checker) dummy() *webgpu.Buffer { return c.keep(c.d.NewStorage("dummy", 256)) }

// cacheIndex is the offset of (position t, kv head h) in a paged cache [pages, page_size, n_kv, hd].
func cacheIndex(table []uint32, t, h, nKV, hd int) int {
	return ((int(table[t/pageSize])*pageSize+t%pageSize)*nKV + h) * hd
}

func ropeCases() []testCase {
	var out []testCase
	for _, wt := range weightTypes { // the KV cache's type
		for _, l3 := range []bool{false, true} {
			for _, batch := range []bool{false, true} {
				variant := wt.String()
				if l3 {
					variant += "+LLAMA3"
				}
				if batch {
					variant += "+BATCH"
				}
				for _, h := range ropeHeads {
					for _, hd := range []int{2, 8, 48, 64} {
						for m := 1; m <= 5; m++ {
							tc := newCase("rope_kv", variant, fmt.Sprintf("heads=%d/%d hd=%d m=%d", h[0], h[1], hd, m), wt,
								func(c *checker) { ropeRun(c, wt, l3, batch, h[0], h[1], hd, m) })
							if wt == wgsl.F16 && m%2 == 0 { // the quick tier: f16 caches with 1, 3 and 5 tokens
								tc = fullOnly(tc)
							}
							out = append(out, tc)
						}
					}
				}
			}
		}
	}
	return out
}

// ropeRun rotates m tokens: q in place in the fused qkv rows (k and v columns unchanged, an
// extra row untouched), k rotated and v copied into their slots of shuffled pages, every other
// slot keeping its poison. One sequence's tokens start at pos0 (13..15 plus a multiple of 16,
// so several tokens cross a page boundary); with batch the rows go round-robin to up to three
// sequences, each with its own pos0 and page table (BATCH reads them per row).
func ropeRun(c *checker, wt wgsl.WeightType, l3, batch bool, nH, nKV, hd, m int) {
	nSeq := 1
	if batch {
		nSeq = min(3, m)
	}
	rowSeq, rowPos := make([]int, m), make([]int, m)
	pos0 := make([]int, nSeq)
	count := make([]int, nSeq)
	for q := range pos0 {
		pos0[q] = 16*c.rng.Intn(5) + 13 + c.rng.Intn(3)
	}
	for r := range rowSeq {
		q := r % nSeq
		rowSeq[r], rowPos[r] = q, pos0[q]+count[q]
		count[q]++
	}
	needs := make([]int, nSeq)
	for q := range needs {
		needs[q] = (pos0[q]+count[q]-1)/pageSize + 1
	}
	tables, nPhys := c.pageTables(needs)
	width := (nH + 2*nKV) * hd
	qkv := c.uniform((m+1)*width, 1)
	nCache := nPhys * pageSize * nKV * hd
	qkvB, kc, vc := c.f32(qkv), c.kvBuffer(poisonSlice(nCache), wt), c.kvBuffer(poisonSlice(nCache), wt)
	p := runtime.RopeParams{NHeads: uint32(nH), NKV: uint32(nKV), HeadDim: uint32(hd), PageSize: pageSize, Theta: 10000}
	var scaling *weights.RopeScaling
	o := runtime.Overrides{}
	if l3 {
		scaling = &llama3
		o["LLAMA3"] = 1
		p.Theta, p.Factor, p.LowFreq, p.HighFreq = 500000, float32(llama3.Factor), float32(llama3.LowFreqFactor), float32(llama3.HighFreqFactor)
		p.OrigMaxPos = float32(llama3.OriginalMaxPos)
	}
	step := runtime.StepBlock{M: uint32(m), Pos0: uint32(pos0[0])}
	rowsB, seqsB, pagesB := c.dummy(), c.dummy(), c.u32(tables[0])
	if batch {
		o["BATCH"] = 1
		step.NSeqs = uint32(nSeq)
		rowsB, seqsB, pagesB = c.batchBuffers(rowSeq, rowPos, tables, 8)
	}
	threads := (nH+nKV)*hd/2 + nKV*hd
	c.dispatch(step, runtime.KernelCall{Kernel: "rope_kv", Weights: wt, Overrides: o, Params: p,
		Buffers: []webgpu.Binding{{Buffer: qkvB}, {Buffer: pagesB}, {Buffer: kc}, {Buffer: vc}, {Buffer: rowsB}, {Buffer: seqsB}},
		Grid:    runtime.Fixed(ceilDiv(threads, 64), uint32(m+1), 1)})

	invFreq := kernelref.RopeInvFreq(hd, float64(p.Theta), scaling)
	q := make([]float32, m*nH*hd)
	k := make([]float32, m*nKV*hd)
	for r := 0; r < m; r++ {
		copy(q[r*nH*hd:], qkv[r*width:r*width+nH*hd])
		copy(k[r*nKV*hd:], qkv[r*width+nH*hd:r*width+(nH+nKV)*hd])
	}
	kernelref.Rope(q, rowPos, m, nH, hd, invFreq)
	kernelref.Rope(k, rowPos, m, nKV, hd, invFreq)
	wantQKV := append([]float32(nil), qkv...)
	wantK, wantV := poisonSlice(nCache), poisonSlice(nCache)
	for r := range rowPos {
		copy(wantQKV[r*width:], q[r*nH*hd:(r+1)*nH*hd])
		for h := 0; h < nKV; h++ {
			at := cacheIndex(tables[rowSeq[r]], rowPos[r], h, nKV, hd)
			copy(wantK[at:at+hd], k[(r*nKV+h)*hd:])
			copy(wantV[at:at+hd], qkv[r*width+(nH+nKV+h)*hd:])
		}
	}
	t := tolFor("rope_kv", wt)
	c.expect("qkv", c.readF32(qkvB, len(qkv)), wantQKV, tolFor("rope_kv", wgsl.F32))
	c.expect("k_cache", c.readKV(kc, nCache, wt), roundKV(wantK, wt), t)
	c.expect("v_cache", c.readKV(vc, nCache, wt), roundKV(wantV, wt), t)
}

// raggedBatches are batched attention steps: each sequence's cache length T and new rows m.
var raggedBatches = [][][2]int{{{7, 1}, {33, 3}, {300, 2}}, {{1, 1}, {40, 5}}, {{300, 5}, {300, 1}, {9, 4}}}

func attentionCases() []testCase {
	var out []testCase
	add := func(wt wgsl.WeightType, kernel string, nH, nKV, hd, rows int, batch bool, seqs [][2]int, window int) {
		size := fmt.Sprintf("heads=%d/%d hd=%d", nH, nKV, hd)
		if window > 0 {
			size += fmt.Sprintf(" window=%d", window)
		}
		for _, sq := range seqs {
			size += fmt.Sprintf(" T=%d m=%d", sq[0], sq[1])
		}
		if kernel == "attention" {
			size += fmt.Sprintf(" rows=%d", rows)
		}
		variant := wt.String()
		if batch {
			variant += "+BATCH"
		}
		tc := newCase(kernel, variant, size, wt, func(c *checker) { attentionRun(c, wt, kernel, nH, nKV, hd, rows, batch, seqs, window) })
		if wt == wgsl.F16 && (len(seqs) > 1 || seqs[0][0] == 33) { // the quick tier: f16 caches on one sequence, T 1, 7, 300
			tc = fullOnly(tc)
		}
		out = append(out, tc)
	}
	for _, kernel := range []string{"attention", "attention_wg"} {
		for _, h := range attnHeads {
			for _, hd := range []int{8, 48, 64, 128} {
				for _, T := range []int{1, 7, 33, 300} {
					for m := 1; m <= min(5, T); m++ {
						for _, rows := range []int{1, 3, 8} {
							if kernel == "attention_wg" && rows > 1 || rows*hd/4 > 64 || (rows > 1 && rows != m && m != 5) {
								continue
							}
							for _, wt := range weightTypes {
								add(wt, kernel, h[0], h[1], hd, rows, false, [][2]int{{T, m}}, 0)
							}
						}
					}
				}
				for _, seqs := range raggedBatches {
					for _, rows := range []int{1, 3, 8} {
						if kernel == "attention_wg" && rows > 1 || rows*hd/4 > 64 {
							continue
						}
						for _, wt := range weightTypes {
							add(wt, kernel, h[0], h[1], hd, rows, true, seqs, 0)
						}
					}
				}
			}
		}
		// Gemma's sliding windows (1, 4 and 32 tokens; its heads of 256) and attention scale.
		for _, hd := range []int{64, 256} {
			for _, window := range []int{1, 4, 32} {
				for _, tm := range [][2]int{{7, 1}, {33, 5}, {300, 1}, {300, 5}} {
					for _, rows := range []int{1, 5} {
						if kernel == "attention_wg" && rows > 1 || rows*hd/4 > 64 {
							continue
						}
						add(wgsl.F32, kernel, 4, 2, hd, rows, false, [][2]int{tm}, window)
					}
				}
				add(wgsl.F32, kernel, 4, 2, hd, 1, true, raggedBatches[0], window)
			}
		}
	}
	return out
}

// attentionRun attends each sequence's m new tokens (the last m of its T positions) over a
// paged cache whose pages are shuffled and whose slots past T hold poison (a kernel reading
// them yields NaN), with q read from fused qkv rows of stride (nH + 2 nKV) hd. One sequence's
// rows go in blocks of rows (attention.wgsl) at positions pos0..; batched ones (BATCH) carry
// each row's sequence and position and each sequence's page table, the blocks listed. The
// output has an extra row (dispatched too) that must keep its poison.
//
// With window > 0, each row sees its window's positions alone, and the scores are scaled by
// 0.2 instead of 1/sqrt(hd) (Gemma's sliding layers and query_pre_attn_scalar).
func attentionRun(c *checker, wt wgsl.WeightType, kernel string, nH, nKV, hd, rows int, batch bool, seqs [][2]int, window int) {
	if kernel == "attention" && !c.d.UseSubgroups() {
		c.skip("the adapter has no subgroups (attention_wg covers it)")
		return
	}
	stride := (nH + 2*nKV) * hd
	scale := 1 / math.Sqrt(float64(hd))
	if window > 0 {
		scale = 0.2
	}
	needs := make([]int, len(seqs))
	m := 0
	for s, sq := range seqs {
		needs[s] = (sq[0] + pageSize - 1) / pageSize
		m += sq[1]
	}
	tables, nPhys := c.pageTables(needs)
	nCache := nPhys * pageSize * nKV * hd
	kc, vc := poisonSlice(nCache), poisonSlice(nCache)
	qkv := c.uniform(m*stride, 2)
	var (
		rowSeq, rowPos []int
		blocks         []runtime.AttnBlock
		want           []float32
	)
	outN := nH * hd
	for s, sq := range seqs {
		T, ms := sq[0], sq[1]
		kLog, vLog := roundKV(c.uniform(T*nKV*hd, 1), wt), roundKV(c.uniform(T*nKV*hd, 1), wt) // [T, nKV, hd], as the cache holds them
		for t := 0; t < T; t++ {
			for h := 0; h < nKV; h++ {
				at := cacheIndex(tables[s], t, h, nKV, hd)
				copy(kc[at:at+hd], kLog[(t*nKV+h)*hd:])
				copy(vc[at:at+hd], vLog[(t*nKV+h)*hd:])
			}
		}
		row0 := len(rowSeq)
		r := max(1, min(rows, 64/max(1, hd/4)))
		for b := 0; b < ms; b += r {
			blocks = append(blocks, runtime.AttnBlock{Row0: uint32(row0 + b), Rows: uint32(min(r, ms-b))})
		}
		q := make([]float32, ms*outN)
		pos := make([]int, ms)
		for i := range pos {
			pos[i] = T - ms + i
			rowSeq, rowPos = append(rowSeq, s), append(rowPos, pos[i])
			copy(q[i*outN:], qkv[(row0+i)*stride:(row0+i)*stride+outN])
		}
		want = append(want, kernelref.AttentionWindow(q, kLog, vLog, pos, ms, T, nH, nKV, hd, scale, window)...)
	}
	want = append(want, poisonSlice(outN)...)
	out := c.poisoned((m + 1) * outN)
	step := runtime.StepBlock{M: uint32(m), Pos0: uint32(rowPos[0])}
	rowsB, seqsB, blocksB, pagesB := c.dummy(), c.dummy(), c.dummy(), c.u32(tables[0])
	o := runtime.Overrides{}
	if batch {
		o["BATCH"] = 1
		step.NSeqs, step.NBlocks = uint32(len(seqs)), uint32(len(blocks))
		maxPages := slices.Max(needs)
		rowsB, seqsB, pagesB = c.batchBuffers(rowSeq, rowPos, tables, maxPages)
		blocksB = c.keep(c.d.UploadBytes("blocks", runtime.SliceBytes(blocks)))
	}
	grid := runtime.Fixed(uint32(nH), uint32(m+1), 1)
	if kernel == "attention" { // one subgroup per (block of rows, head): a workgroup each
		r := max(1, min(rows, 64/max(1, hd/4)))
		o["WG"], o["ROWS"] = float64(c.d.Adapter.Info.SubgroupMax), float64(r)
		grid = runtime.Fixed(uint32(nH)*ceilDiv(m+1, r), 1, 1)
		if batch {
			grid = runtime.Fixed(uint32(nH*(len(blocks)+1)), 1, 1) // a block past the last: no output
		}
	}
	c.dispatch(step, runtime.KernelCall{Kernel: kernel, Weights: wt, Overrides: o,
		Params: runtime.AttnParams{NHeads: uint32(nH), NKV: uint32(nKV), HeadDim: uint32(hd), PageSize: pageSize,
			QStride: uint32(stride), Scale: float32(scale), Window: uint32(window)},
		Buffers: []webgpu.Binding{{Buffer: c.f32(qkv)}, {Buffer: pagesB}, {Buffer: c.kvBuffer(kc, wt)},
			{Buffer: c.kvBuffer(vc, wt)}, {Buffer: out}, {Buffer: rowsB}, {Buffer: seqsB}, {Buffer: blocksB}},
		Grid: grid})
	c.expect("out", c.readF32(out, len(want)), want, tolFor(kernel, wt))
}
