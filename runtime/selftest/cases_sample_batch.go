package selftest

import (
	"fmt"
	"math"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// batchSampleRun samples four sequences in one pass of the sampler, each with its own
// parameters, drafts (0 to 3, one with q) and random key, among rows of the step given in a
// shuffled order, and checks each against kernelref.RejectionSample over 50 seeds.
func batchSampleRun(c *checker, V int) {
	type seq struct {
		p    kernelref.SamplingParams
		k    int
		hasQ bool
	}
	seqs := []seq{{kernelref.SamplingParams{}, 2, false}, {kernelref.SamplingParams{Temperature: 0.8, TopK: 5, TopP: 1}, 0, false},
		{kernelref.SamplingParams{Temperature: 1, TopP: 0.9}, 3, true}, {kernelref.SamplingParams{Temperature: 0.7, TopP: 1}, 1, false}}
	nRows := 0
	for _, s := range seqs {
		nRows += s.k + 1
	}
	logits := c.randomLogits(nRows*V, 1.5)
	// The step's rows: each sequence's logits rows sit among 2 other rows of the step.
	perm := c.rng.Perm(3 * nRows)
	rowsel := make([]uint32, nRows)
	rowinfo := make([]runtime.RowInfo, 3*nRows)
	infos := make([]runtime.SeqInfo, len(seqs))
	var qs []float32
	var drafts []uint32
	lr := 0
	for i, s := range seqs {
		infos[i] = runtime.SeqInfo{LogitRow0: uint32(lr), NDraft: uint32(s.k), Sampled: 1, PosSample: uint32(1 + c.rng.Intn(400)),
			DraftOff: uint32(len(drafts)), SeqID: uint32(i * 7), Temperature: s.p.Temperature, TopK: uint32(s.p.TopK), TopP: s.p.TopP}
		if infos[i].TopP == 0 {
			infos[i].TopP = 1
		}
		for j := 0; j <= s.k; j++ {
			rowsel[lr+j] = uint32(perm[lr+j])
			rowinfo[perm[lr+j]] = runtime.RowInfo{Seq: uint32(i)}
		}
		drafts = append(drafts, make([]uint32, s.k)...)
		if s.hasQ {
			infos[i].HasQ = 1
			qs = append(qs, make([]float32, (int(infos[i].DraftOff)*V)-len(qs))...)
			for j := 0; j < s.k; j++ {
				row := make([]float32, V)
				var sum float32
				for v := range row {
					row[v] = float32(math.Exp(c.rng.NormFloat64()))
					sum += row[v]
				}
				for v := range row {
					row[v] /= sum
				}
				qs = append(qs, row...)
			}
		}
		lr += s.k + 1
	}
	qs = append(qs, make([]float32, len(drafts)*V-len(qs))...)
	stride := 5
	out := c.u32(make([]uint32, len(seqs)*stride))
	draftsB, seqsB := c.u32(append(drafts, 0)), c.keep(c.d.UploadBytes("seqs", runtime.SliceBytes(infos)))
	res := c.keep(c.d.NewStorage("sample rows", uint64(16*nRows)))
	adj, lp := c.keep(c.d.NewStorage("adj", 16)), c.keep(c.d.NewStorage("lp", uint64(4*runtime.LogprobStride*nRows)))
	sp := runtime.SampleParams{Vocab: uint32(V), OutStride: uint32(stride)}
	prog := c.dispatchless(append(
		rowCalls(sp, uint32(nRows), []webgpu.Binding{{Buffer: c.f32(logits)}, {Buffer: draftsB}, {Buffer: c.f32(append(qs, 0))},
			{Buffer: c.u32(rowsel)}, {Buffer: c.keep(c.d.UploadBytes("rows", runtime.SliceBytes(rowinfo)))}, {Buffer: seqsB},
			{Buffer: res}, {Buffer: adj}, {Buffer: lp}}),
		runtime.KernelCall{Kernel: "sample_pick", Weights: wgsl.F32, Params: sp,
			Buffers: []webgpu.Binding{{Buffer: draftsB}, {Buffer: seqsB}, {Buffer: res}, {Buffer: out}},
			Grid:    runtime.Fixed(1, 1, 1)})...)
	agree, trials := 0, 0
	for t := 0; t < seeds; t++ {
		for i, s := range seqs {
			infos[i].SeedLo, infos[i].SeedHi = uint32(t*131+i), uint32(t)
			for j := 0; j < s.k; j++ { // the likeliest token half of the time, else random
				row := logits[(int(infos[i].LogitRow0)+j)*V:]
				drafts[int(infos[i].DraftOff)+j] = uint32(c.rng.Intn(V))
				if c.rng.Intn(2) == 0 {
					drafts[int(infos[i].DraftOff)+j] = uint32(kernelref.Argmax(row[:V]))
				}
			}
		}
		seqsB.Write(0, runtime.SliceBytes(infos))
		draftsB.Write(0, runtime.U32Bytes(append(drafts, 0)))
		c.must(prog.Run(&runtime.StepBlock{M: uint32(3 * nRows), NSeqs: uint32(len(seqs)), LogitRows: uint32(nRows)}))
		got := c.readU32(out, len(seqs)*stride)
		for i, s := range seqs {
			si := infos[i]
			l0 := int(si.LogitRow0)
			var q []float32
			if s.hasQ {
				q = qs[int(si.DraftOff)*V : (int(si.DraftOff)+s.k)*V]
			}
			ds := make([]int, s.k)
			for j := range ds {
				ds[j] = int(drafts[int(si.DraftOff)+j])
			}
			want, _ := kernelref.RejectionSample(logits[l0*V:(l0+s.k+1)*V], ds, q, s.p, uint64(si.SeedHi)<<32|uint64(si.SeedLo), si.SeqID, si.PosSample)
			w := make([]uint32, 1+len(want))
			w[0] = uint32(len(want))
			for j, tok := range want {
				w[1+j] = uint32(tok)
			}
			trials++
			c.res.checked++
			if slices.Equal(got[i*stride:i*stride+len(w)], w) {
				agree++
			} else {
				c.mismatch(fmt.Sprintf("seed %d sequence %d: got %s want %s", t, i, fmtOut(got[i*stride:(i+1)*stride]), fmtOut(w)))
			}
		}
	}
	r := c.res
	r.Agreement = float64(agree) / float64(trials)
	if r.Agreement >= rejectionAgreement {
		r.FirstMismatches = nil
	} else if r.Err == "" {
		r.Err = fmt.Sprintf("agreement %.2f < %.2f", r.Agreement, rejectionAgreement)
	}
}
