package selftest

import (
	"fmt"
	"math"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

func sampleCases() []testCase {
	var out []testCase
	add := func(variant, size string, run func(c *checker)) {
		out = append(out, newCase("sample", variant, size, wgsl.F32, run))
	}
	for _, V := range []int{1, 7, 33, 4097, modelVocab} {
		add("greedy", fmt.Sprintf("V=%d", V), func(c *checker) { greedyRun(c, V) })
	}
	// The full grid of sampling parameters on V = 33 and 4097; on the model's vocabulary (where
	// one top-p dispatch is ~10 ms of lavapipe, 50 seeds each) three representative settings.
	for _, V := range []int{33, 4097} {
		for _, temp := range []float32{0.7, 1} {
			for _, k := range []int{0, 5, 40} {
				for _, p := range []float32{1, 0.9, 0.5} {
					sp := kernelref.SamplingParams{Temperature: temp, TopK: k, TopP: p}
					add(paramsName(sp), fmt.Sprintf("V=%d", V), func(c *checker) { stochasticRun(c, V, sp) })
				}
			}
		}
	}
	for _, sp := range []kernelref.SamplingParams{{Temperature: 1, TopP: 1}, {Temperature: 0.7, TopK: 40, TopP: 0.9}, {Temperature: 1, TopP: 0.5}} {
		add(paramsName(sp), fmt.Sprintf("V=%d", modelVocab), func(c *checker) { stochasticRun(c, modelVocab, sp) })
	}
	// The kernel gathers top-k candidates when k <= 1024, and for top-p alone the 1024 largest
	// when they hold top_p of the mass: peaked logits take that path, flat ones fall back to
	// scanning the vocabulary, and so does k = 2000.
	for _, scale := range []float64{0.3, 6} {
		sp := kernelref.SamplingParams{Temperature: 1, TopP: 0.9}
		add(paramsName(sp), fmt.Sprintf("V=4097 logits*%g", scale), func(c *checker) { stochasticRunScaled(c, 4097, sp, scale) })
	}
	big := kernelref.SamplingParams{Temperature: 1, TopK: 2000, TopP: 0.95}
	add(paramsName(big), "V=4097", func(c *checker) { stochasticRun(c, 4097, big) })
	for _, V := range []int{33, 4097} {
		add("batch", fmt.Sprintf("V=%d seqs=4", V), func(c *checker) { batchSampleRun(c, V) })
		for _, sp := range []kernelref.SamplingParams{{Temperature: 1, TopP: 1, MinP: 0.1}, {Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05}} {
			add(paramsName(sp), fmt.Sprintf("V=%d", V), func(c *checker) { stochasticRun(c, V, sp) })
		}
	}
	out = append(out, processCases()...)
	for _, V := range []int{7, 4097} {
		for _, sp := range []kernelref.SamplingParams{{}, {Temperature: 1, TopK: 5, TopP: 0.9}} {
			add("nonfinite "+paramsName(sp), fmt.Sprintf("V=%d n_draft=2", V), func(c *checker) { nonfiniteRun(c, V, sp) })
		}
	}
	modes := []kernelref.SamplingParams{{}, {Temperature: 0.8, TopP: 1}, {Temperature: 1, TopK: 5, TopP: 0.9}}
	for _, sp := range modes {
		for _, hasQ := range []bool{false, true} {
			variant := "reject " + paramsName(sp)
			if hasQ {
				variant += " q"
			}
			for k := 1; k <= 8; k++ {
				add(variant, fmt.Sprintf("V=33 n_draft=%d", k), func(c *checker) { rejectionRun(c, 33, k, hasQ, sp, false) })
			}
			add(variant, "V=4097 n_draft=4", func(c *checker) { rejectionRun(c, 4097, 4, hasQ, sp, false) })
			// Token masks (structured outputs): each row its own, q renormalised under it.
			add(variant+" mask", "V=33 n_draft=3", func(c *checker) { rejectionRun(c, 33, 3, hasQ, sp, true) })
			add(variant+" mask", "V=4097 n_draft=2", func(c *checker) { rejectionRun(c, 4097, 2, hasQ, sp, true) })
		}
	}
	return out
}

func paramsName(p kernelref.SamplingParams) string {
	if p.Greedy() {
		return "greedy"
	}
	s := fmt.Sprintf("T=%g top_k=%d top_p=%g", p.Temperature, p.TopK, p.TopP)
	if p.MinP > 0 {
		s += fmt.Sprintf(" min_p=%g", p.MinP)
	}
	return s
}

// sampler is the recorded sampler (sample_rows, then sample_pick) over the logits rows
// [rows, V] of one sequence, with its output [rows + 1]. si is the sequence: the fields a case
// sets are its sampling parameters and random key (SeqID, PosSample).
type sampler struct {
	c                 *checker
	prog              *runtime.Program
	logits, drafts, q *webgpu.Buffer
	seqs, out         *webgpu.Buffer
	adj, lp           *webgpu.Buffer // [maxAdj] Adj, [rows, LogprobStride] u32
	rows              int
	agree, trials     int
	threshold         float64
	si                runtime.SeqInfo
	seedBase          uint64
	mask              []uint32 // [rows, MaskWords(V)] when the case masks (si.MaskOff set)
}

func newSampler(c *checker, logits []float32, V, nDraft int, q []float32, threshold float64) *sampler {
	s := &sampler{c: c, rows: nDraft + 1, threshold: threshold}
	s.logits = c.f32(logits)
	s.drafts = c.u32(make([]uint32, max(nDraft, 1)+s.rows*batch.MaskWords(V))) // drafts, then masks
	if q == nil {
		q = []float32{0}
	}
	s.q = c.f32(q)
	s.out = c.u32(make([]uint32, nDraft+2))
	rowsel, rows := make([]uint32, s.rows), make([]runtime.RowInfo, s.rows)
	for j := range rowsel {
		rowsel[j] = uint32(j)
	}
	rowsB := c.keep(c.d.UploadBytes("rows", runtime.SliceBytes(rows)))
	s.seqs = c.keep(c.d.UploadBytes("seqs", runtime.SliceBytes([]runtime.SeqInfo{{}})))
	res := c.keep(c.d.NewStorage("sample rows", uint64(16*s.rows)))
	s.adj = c.keep(c.d.NewStorage("adj", 16*maxAdj))
	s.lp = c.u32(make([]uint32, s.rows*runtime.LogprobStride))
	sp := runtime.SampleParams{Vocab: uint32(V), OutStride: uint32(nDraft + 2)}
	s.prog = c.dispatchless(append(
		rowCalls(sp, uint32(s.rows), []webgpu.Binding{{Buffer: s.logits}, {Buffer: s.drafts}, {Buffer: s.q}, {Buffer: c.u32(rowsel)},
			{Buffer: rowsB}, {Buffer: s.seqs}, {Buffer: res}, {Buffer: s.adj}, {Buffer: s.lp}}),
		runtime.KernelCall{Kernel: "sample_pick", Weights: wgsl.F32, Params: sp,
			Buffers: []webgpu.Binding{{Buffer: s.drafts}, {Buffer: s.seqs}, {Buffer: res}, {Buffer: s.out}},
			Grid:    runtime.Fixed(1, 1, 1)})...)
	s.seedBase = c.rng.Uint64()
	s.si = runtime.SeqInfo{NDraft: uint32(nDraft), Sampled: 1, SeqID: uint32(c.rng.Intn(1000)), TopP: 1}
	return s
}

// rowCalls are the per-row half of the sampler over rows logits rows: sample_rows and
// sample_draw, each taking its own rows (greedy ones, the others).
func rowCalls(sp runtime.SampleParams, rows uint32, b []webgpu.Binding) []runtime.KernelCall {
	noQ := slices.Clone(b) // sample_rows does not read q
	noQ[2] = webgpu.Binding{}
	return []runtime.KernelCall{
		{Kernel: "sample_rows", Weights: wgsl.F32, Params: sp, Buffers: noQ, Grid: runtime.Fixed(rows, 1, 1)},
		{Kernel: "sample_draw", Weights: wgsl.F32, Params: sp, Buffers: b, Grid: runtime.Fixed(rows, 1, 1)},
	}
}

// maxAdj is the logit adjustments a sampler case can pass.
const maxAdj = 1024

// setParams copies sampling parameters into the sequence.
func (s *sampler) setParams(p kernelref.SamplingParams) {
	s.si.Temperature, s.si.TopK, s.si.TopP, s.si.MinP = p.Temperature, uint32(max(p.TopK, 0)), p.TopP, p.MinP
}

// seed is trial i's seed.
func (s *sampler) seed(i int) uint64 { return s.seedBase + uint64(i)*0x9E3779B97F4A7C15 }

// trial runs the sampler once for seed i and compares out with want = [n, tokens...].
func (s *sampler) trial(i int, drafts []int, want []int) {
	w := make([]uint32, s.rows+1)
	for j := range w {
		w[j] = PoisonU32
	}
	w[0] = uint32(len(want))
	for j, t := range want {
		w[1+j] = uint32(t)
	}
	s.trialOut(i, drafts, w)
}

// trialOut runs the sampler once for seed i and compares the whole out buffer with w.
func (s *sampler) trialOut(i int, drafts []int, w []uint32) {
	c := s.c
	s.si.SeedLo, s.si.SeedHi = uint32(s.seed(i)), uint32(s.seed(i)>>32)
	s.seqs.Write(0, runtime.SliceBytes([]runtime.SeqInfo{s.si}))
	if len(drafts) > 0 {
		du := make([]uint32, len(drafts))
		for j, d := range drafts {
			du[j] = uint32(d)
		}
		s.drafts.Write(0, runtime.U32Bytes(du))
	}
	if s.mask != nil {
		s.drafts.Write(uint64(4*s.si.MaskOff), runtime.U32Bytes(s.mask))
	}
	poison := make([]uint32, s.rows+1)
	for j := range poison {
		poison[j] = PoisonU32
	}
	s.out.Write(0, runtime.U32Bytes(poison))
	c.must(s.prog.Run(&runtime.StepBlock{M: uint32(s.rows), NSeqs: 1, LogitRows: uint32(s.rows)}))
	got := c.readU32(s.out, s.rows+1)
	s.trials++
	c.res.checked++
	if slices.Equal(got, w) {
		s.agree++
		return
	}
	c.mismatch(fmt.Sprintf("seed %#x: got %s want %s", s.seed(i), fmtOut(got), fmtOut(w)))
}

func fmtOut(v []uint32) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(int32(x))
		if x == PoisonU32 {
			parts[i] = "poison"
		}
	}
	return fmt.Sprint(parts)
}

// finish records the agreement rate; under the threshold the case fails with the first
// mismatches as evidence, at or above it the (tolerated) mismatches are dropped.
func (s *sampler) finish() {
	r := s.c.res
	r.Agreement = float64(s.agree) / float64(s.trials)
	if r.Agreement >= s.threshold {
		r.FirstMismatches = nil
	} else if r.Err == "" {
		r.Err = fmt.Sprintf("agreement %.2f < %.2f", r.Agreement, s.threshold)
	}
}

// randomLogits returns n logits ~ N(0, scale^2).
func (c *checker) randomLogits(n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(c.rng.NormFloat64() * scale)
	}
	return v
}

// greedyRun checks temperature 0 against kernelref.Argmax on random logits, on logits whose maximum
// appears twice (the lowest index wins), and on constant logits.
func greedyRun(c *checker, V int) {
	rows := [][]float32{c.randomLogits(V, 2), c.randomLogits(V, 2), make([]float32, V)}
	tie := rows[1]
	a := kernelref.Argmax(tie)
	tie[c.rng.Intn(V)] = tie[a]
	s := newSampler(c, rows[0], V, 0, nil, 1)
	s.si.PosSample = uint32(c.rng.Intn(100))
	for i, l := range rows {
		s.logits.Write(0, runtime.F32Bytes(l))
		s.trial(i, nil, []int{kernelref.Argmax(l)})
	}
	s.finish()
}

// stochasticRun checks sampling against kernelref.Sample for the same (seed, seq, pos), pos being the
// produced token's position pos0 + m, over 50 seeds.
func stochasticRun(c *checker, V int, p kernelref.SamplingParams) { stochasticRunScaled(c, V, p, 2) }

// stochasticRunScaled is stochasticRun on logits ~ N(0, scale^2).
func stochasticRunScaled(c *checker, V int, p kernelref.SamplingParams, scale float64) {
	logits := c.randomLogits(V, scale)
	s := newSampler(c, logits, V, 0, nil, sampleAgreement)
	s.setParams(p)
	s.si.PosSample = uint32(1 + c.rng.Intn(500))
	probs := kernelref.ProcessedProbs(logits, p) // Sample = GumbelMax(ProcessedProbs), hoisted
	pos := s.si.PosSample
	for i := 0; i < seeds; i++ {
		want := kernelref.GumbelMax(probs, s.seed(i), s.si.SeqID, pos)
		s.trial(i, nil, []int{want})
	}
	s.finish()
}

// rejectionRun checks the verification of k drafts against kernelref.RejectionSample over 50 seeds,
// with fresh drafts per seed. Each target row has a likely token (logit + 5); drafts are drawn
// from q when it is given, else are the likely token 80% of the time, so that acceptance,
// rejection and the bonus token all occur. With masked, each row has a random token mask
// (about half the vocabulary, the likely token in it two times in three) that the reference
// applies to its logits and q rows.
func rejectionRun(c *checker, V, k int, hasQ bool, p kernelref.SamplingParams, masked bool) {
	likely := make([]int, k+1)
	logits := c.randomLogits((k+1)*V, 1.5)
	for j := range likely {
		likely[j] = c.rng.Intn(V)
		logits[j*V+likely[j]] += 5
	}
	var q []float32 // [k, V]
	if hasQ {
		q = make([]float32, k*V)
		for j := 0; j < k; j++ {
			w := make([]float64, V)
			var sum float64
			for i := range w {
				w[i] = math.Exp(c.rng.NormFloat64())
				if i == likely[j] {
					w[i] *= math.Exp(3)
				}
				sum += w[i]
			}
			for i := range w {
				q[j*V+i] = float32(w[i] / sum)
			}
		}
	}
	threshold := rejectionAgreement
	if p.Greedy() {
		threshold = 1
	}
	s := newSampler(c, logits, V, k, q, threshold)
	s.setParams(p)
	s.si.PosSample = uint32(1 + c.rng.Intn(500))
	if hasQ {
		s.si.HasQ = 1
	}
	refLogits, refQ := logits, q
	if masked {
		W := batch.MaskWords(V)
		s.mask = make([]uint32, (k+1)*W)
		refLogits, refQ = slices.Clone(logits), nil
		for j := range k + 1 {
			m := s.mask[j*W : (j+1)*W]
			for t := range V {
				if c.rng.Intn(2) == 0 || t == likely[j] && c.rng.Intn(3) > 0 {
					m[t/32] |= 1 << (t % 32)
				}
			}
			m[0] |= 1 // at least one token
			kernelref.ApplyMask(refLogits[j*V:(j+1)*V], m)
			if hasQ && j < k {
				refQ = append(refQ, kernelref.MaskQ(q[j*V:(j+1)*V], m)...)
			}
		}
		s.si.MaskOff = uint32(max(k, 1))
	}
	pos0 := s.si.PosSample // position of the token row 0 verifies
	for i := 0; i < seeds; i++ {
		drafts := make([]int, k)
		for j := range drafts {
			switch {
			case hasQ:
				drafts[j] = drawFrom(c, q[j*V:(j+1)*V])
			case c.rng.Float64() < 0.8:
				drafts[j] = likely[j]
			default:
				drafts[j] = c.rng.Intn(V)
			}
		}
		want, _ := kernelref.RejectionSample(refLogits, drafts, refQ, p, s.seed(i), s.si.SeqID, pos0)
		s.trial(i, drafts, want)
	}
	s.finish()
}

// drawFrom samples an index of the distribution q with the case's random source.
func drawFrom(c *checker, q []float32) int {
	u := c.rng.Float64()
	for i, v := range q {
		if u -= float64(v); u < 0 {
			return i
		}
	}
	return len(q) - 1
}

// nonfiniteRun puts a NaN, an infinity or both in one of three logits rows (two drafts) and
// expects nothing sampled: out = [0, kind, row] (kind 1 NaN, 2 infinity, 3 both), the rest
// untouched; finite logits as large as 3e38 sample as usual.
func nonfiniteRun(c *checker, V int, p kernelref.SamplingParams) {
	logits := c.randomLogits(3*V, 2)
	s := newSampler(c, logits, V, 2, nil, 1)
	s.setParams(p)

	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	for i, tc := range []struct {
		row  int
		vals []float32
		kind int
	}{{0, []float32{nan}, 1}, {1, []float32{inf}, 2}, {2, []float32{nan, inf}, 3}, {1, []float32{-inf}, 2}} {
		l := slices.Clone(logits)
		for _, v := range tc.vals {
			l[tc.row*V+c.rng.Intn(V)] = v
		}
		if tc.row < 2 {
			l[2*V+c.rng.Intn(V)] = nan // a later row must not be reported
		}
		s.logits.Write(0, runtime.F32Bytes(l))
		s.trialOut(i, []int{0, 0}, []uint32{0, uint32(tc.kind), uint32(tc.row), PoisonU32})
	}
	big := slices.Clone(logits)
	big[c.rng.Intn(3*V)] = 3e38
	s.logits.Write(0, runtime.F32Bytes(big))
	s.si.Temperature = 0
	want, _ := kernelref.RejectionSample(big, []int{0, 0}, nil, kernelref.SamplingParams{}, 0, 0, 0)
	w := []uint32{uint32(len(want)), PoisonU32, PoisonU32, PoisonU32}
	for j, t := range want {
		w[1+j] = uint32(t)
	}
	s.trialOut(9, []int{0, 0}, w)
	s.finish()
}
