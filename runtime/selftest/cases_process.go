package selftest

import (
	"fmt"
	"math"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/wgsl"
)

// processCases are the logits processors' and the logprobs' cases.
func processCases() []testCase {
	var out []testCase
	add := func(variant, size string, run func(c *checker)) {
		out = append(out, newCase("sample", variant, size, wgsl.F32, run))
	}
	pens := []kernelref.Penalties{{}, {Presence: 0.5, Frequency: 0.3, Repetition: 1.3}, {Repetition: 0.8}, {Presence: -1, Frequency: 2}}
	modes := []kernelref.SamplingParams{{}, {Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05}}
	for _, V := range []int{33, 4097} {
		for _, k := range []int{0, 3} {
			for _, pen := range pens {
				for _, sp := range modes {
					name := fmt.Sprintf("process %s presence=%g frequency=%g repetition=%g", paramsName(sp), pen.Presence, pen.Frequency, pen.Repetition)
					add(name, fmt.Sprintf("V=%d n_draft=%d", V, k), func(c *checker) { processorsRun(c, V, k, sp, pen) })
				}
			}
		}
	}
	for _, V := range []int{7, 4097} {
		for _, k := range []int{0, 4} {
			for _, n := range []int{0, 5, 20} {
				for _, sp := range modes {
					add("logprobs "+paramsName(sp), fmt.Sprintf("V=%d n_draft=%d top=%d", V, k, n), func(c *checker) { logprobsRun(c, V, k, n, sp) })
				}
			}
		}
	}
	return out
}

// processCase is a sequence's logits processors and what they count: its prompt's tokens, the
// tokens generated before the step (with repeats) and its logit biases.
type processCase struct {
	pen       kernelref.Penalties
	inPrompt  map[int]bool
	generated []int
}

// newProcessCase draws a prompt of 12 tokens, 10 generated tokens (some twice, some in the
// prompt) and biases on 6 tokens (one of them -100, one of them +8), from a vocabulary of V.
func newProcessCase(c *checker, V int, pen kernelref.Penalties) processCase {
	pc := processCase{pen: pen, inPrompt: map[int]bool{}}
	for range 12 {
		pc.inPrompt[c.rng.Intn(V)] = true
	}
	for i := range 10 {
		t := c.rng.Intn(V)
		if i%3 == 2 {
			t = pc.generated[c.rng.Intn(len(pc.generated))]
		}
		pc.generated = append(pc.generated, t)
	}
	pc.pen.Bias = map[int]float32{}
	for i := range 6 {
		pc.pen.Bias[c.rng.Intn(V)] = float32(c.rng.NormFloat64() * 2)
		if i == 0 {
			pc.pen.Bias[c.rng.Intn(V)] = -100
		}
		if i == 1 {
			pc.pen.Bias[c.rng.Intn(V)] = 8
		}
	}
	return pc
}

// adj is the case's adjustment list, each token once, in a shuffled order.
func (pc processCase) adj(c *checker) []batch.Adj {
	byTok := map[int]*batch.Adj{}
	entry := func(t int) *batch.Adj {
		if byTok[t] == nil {
			byTok[t] = &batch.Adj{Token: uint32(t)}
		}
		return byTok[t]
	}
	for t := range pc.inPrompt {
		entry(t).Prompt = 1
	}
	for _, t := range pc.generated {
		entry(t).Count++
	}
	for t, b := range pc.pen.Bias {
		entry(t).Bias = b
	}
	var out []batch.Adj
	for _, a := range byTok {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b batch.Adj) int { return int(a.Token) - int(b.Token) })
	c.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// processed is logits rows [k+1, V] after the processors, row j counting drafts[:j] as
// generated (plain decoding would have generated them before row j's token).
func (pc processCase) processed(logits []float32, V int, drafts []int) []float32 {
	out := make([]float32, 0, len(logits))
	for j := 0; j*V < len(logits); j++ {
		gen := append(slices.Clone(pc.generated), drafts[:j]...)
		out = append(out, pc.pen.Apply(logits[j*V:(j+1)*V], pc.inPrompt, gen)...)
	}
	return out
}

// processorsRun checks the logits processors (bias, presence, frequency and repetition
// penalties, min-p) with k drafts against ref: the processed logits rows, bit for bit close,
// and the verified tokens over 50 seeds. Drafts are often tokens already generated or biased,
// so that a row's counts include the drafts before it.
func processorsRun(c *checker, V, k int, p kernelref.SamplingParams, pen kernelref.Penalties) {
	logits := c.randomLogits((k+1)*V, 2)
	pc := newProcessCase(c, V, pen)
	adj := pc.adj(c)
	threshold := rejectionAgreement
	if p.Greedy() {
		threshold = 1
	}
	s := newSampler(c, logits, V, k, nil, threshold)
	s.setParams(p)
	s.si.PosSample = uint32(1 + c.rng.Intn(500))
	s.si.Presence, s.si.Frequency, s.si.Repetition = pen.Presence, pen.Frequency, pen.Repetition
	s.si.AdjLen = uint32(len(adj))
	s.adj.Write(0, runtime.SliceBytes(adj))
	for i := 0; i < seeds; i++ {
		drafts := make([]int, k)
		for j := range drafts {
			switch c.rng.Intn(3) {
			case 0:
				drafts[j] = pc.generated[c.rng.Intn(len(pc.generated))]
			case 1:
				drafts[j] = c.rng.Intn(V)
			default:
				if j > 0 {
					drafts[j] = drafts[c.rng.Intn(j)] // a draft twice
				}
			}
		}
		want := pc.processed(logits, V, drafts)
		s.logits.Write(0, runtime.F32Bytes(logits)) // processed in place: fresh for each trial
		toks, _ := kernelref.RejectionSample(want, drafts, nil, p, s.seed(i), s.si.SeqID, s.si.PosSample)
		s.trial(i, drafts, toks)
		if i < 3 {
			c.exact(func() {
				c.expect(fmt.Sprintf("seed %d processed logits", i), c.readF32(s.logits, len(want)), want, tol{atol: 1e-5, rtol: 1e-6})
			})
		}
	}
	s.finish()
}

// logprobsRun checks each row's logprobs (of its draft and of its token, and its n likeliest
// tokens) after the processors, with k drafts, against kernelref.Logprobs.
func logprobsRun(c *checker, V, k, n int, p kernelref.SamplingParams) {
	logits := c.randomLogits((k+1)*V, 2)
	pc := newProcessCase(c, V, kernelref.Penalties{Frequency: 0.5})
	adj := pc.adj(c)
	threshold := 0.75 // stochastic: one near tie in 4 seeds tolerated
	if p.Greedy() {
		threshold = 1
	}
	s := newSampler(c, logits, V, k, nil, threshold)
	s.setParams(p)
	s.si.PosSample = uint32(1 + c.rng.Intn(500))
	s.si.Frequency, s.si.AdjLen, s.si.Logprobs = 0.5, uint32(len(adj)), 1+uint32(n)
	s.adj.Write(0, runtime.SliceBytes(adj))
	for i := 0; i < 4; i++ {
		drafts := make([]int, k)
		for j := range drafts {
			drafts[j] = c.rng.Intn(V)
			if i%2 == 0 { // accepted (greedy) drafts: the likeliest processed token
				drafts[j] = kernelref.Argmax(pc.processed(logits, V, drafts)[j*V : (j+1)*V])
			}
		}
		want := pc.processed(logits, V, drafts)
		s.logits.Write(0, runtime.F32Bytes(logits))
		s.lp.Write(0, runtime.U32Bytes(slices.Repeat([]uint32{PoisonU32}, s.rows*runtime.LogprobStride)))
		toks, _ := kernelref.RejectionSample(want, drafts, nil, p, s.seed(i), s.si.SeqID, s.si.PosSample)
		s.trial(i, drafts, toks)
		if out := c.readU32(s.out, s.rows+1); int(out[0]) >= 1 && int(out[0]) <= s.rows {
			toks = toks[:0] // the tokens the device emitted (a near tie may differ from ref's)
			for _, t := range out[1 : 1+out[0]] {
				toks = append(toks, int(t))
			}
		}
		got := c.readU32(s.lp, s.rows*runtime.LogprobStride)
		c.exact(func() { checkLogprobs(c, got, want, toks, V, n, i) })
	}
	s.finish()
}

// checkLogprobs compares the lp output of seed i with kernelref.Logprobs of the processed rows want,
// for the emitted tokens toks: row j < last holds its draft's, the last row its token's.
func checkLogprobs(c *checker, got []uint32, want []float32, toks []int, V, n, i int) {
	f := func(w uint32) float32 { return math.Float32frombits(w) }
	for j := range toks { // the emitted tokens' rows: row j's draft, the last row's token
		row := got[j*runtime.LogprobStride:]
		lpTok, ids, lps := kernelref.Logprobs(want[j*V:(j+1)*V], toks[j], min(n, V))
		gotTok := f(row[0])
		if j == len(toks)-1 {
			gotTok = f(row[1])
		}
		c.expect(fmt.Sprintf("seed %d row %d logprob", i, j), []float32{gotTok}, []float32{lpTok}, tol{atol: 2e-5, rtol: 1e-5})
		gotRank := row[2]
		if j == len(toks)-1 {
			gotRank = row[3]
		}
		c.expectU32(fmt.Sprintf("seed %d row %d rank", i, j), []uint32{gotRank}, []uint32{uint32(kernelref.Rank(want[j*V:(j+1)*V], toks[j]))})
		gotIDs, gotLps := make([]uint32, len(ids)), make([]float32, len(ids))
		wantIDs := make([]uint32, len(ids))
		for t := range ids {
			gotIDs[t], gotLps[t], wantIDs[t] = row[4+2*t], f(row[5+2*t]), uint32(ids[t])
		}
		c.expectU32(fmt.Sprintf("seed %d row %d top ids", i, j), gotIDs, wantIDs)
		c.expect(fmt.Sprintf("seed %d row %d top logprobs", i, j), gotLps, lps, tol{atol: 2e-5, rtol: 1e-5})
		if n < batch.MaxTopLogprobs { // past the n asked for: untouched
			c.expectU32(fmt.Sprintf("seed %d row %d past top %d", i, j, n), row[4+2*len(ids):4+2*len(ids)+2], []uint32{PoisonU32, PoisonU32})
		}
	}
}
