package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
)

// rowSpan is where a step put one sequence's rows.
type rowSpan struct{ row0, pos0, n int }

// Step runs one forward pass over the batch's tokens in one submit and samples on the device.
// Only the emitted token ids come back. The caches then hold all of the tokens: the caller
// truncates the rejected drafts. An invalid batch (wrapping batch.ErrBadInput, ErrContextFull or
// kv.ErrPoolExhausted) or a failed submit leaves every cache as it was.
func (m *Model) Step(steps []batch.SeqStep) ([]batch.StepOut, error) {
	if m.embed == nil {
		return nil, fmt.Errorf("model: %w (the model was released)", runtime.ErrClosed)
	}
	if err := m.checkBatch(steps); err != nil {
		return nil, err
	}
	sp, err := m.prepare(steps)
	if err != nil {
		return nil, err
	}
	o := m.Opts
	if !m.ran[sp.prog] {
		m.ran[sp.prog] = true
		if o.FirstRun != nil {
			defer o.FirstRun(m.describe(sp.prog))()
		}
	}
	enc := m.d.NewEncoder()
	sp.prog.Encode(enc, &sp.step, nil)
	m.encodeKeep(enc, steps, sp.spans)
	stride := o.MaxDraft + 2
	sampled := sp.step.LogitRows > 0
	lpBytes := uint64(4 * runtime.LogprobStride * int(sp.step.LogitRows))
	if sampled {
		enc.Copy(m.out, 0, m.staging, 0, uint64(4*stride*len(steps)))
		if sp.logprobs {
			enc.Copy(m.lp, 0, m.lpStaging, 0, lpBytes)
		}
	}
	if err := enc.Submit(); err != nil {
		for s, st := range steps {
			st.Seq.Truncate(sp.before[s])
		}
		return nil, err
	}
	for s, st := range steps {
		st.Seq.Commit(sp.before[s] + len(st.Tokens))
	}
	m.commitKeep(steps, sp.spans)
	outs := make([]batch.StepOut, len(steps))
	if !sampled {
		return outs, nil
	}
	raw := make([]byte, 4*stride*len(steps))
	if err := m.staging.Read(0, raw); err != nil {
		return nil, err
	}
	var lp []byte
	if sp.logprobs {
		lp = make([]byte, lpBytes)
		if err := m.lpStaging.Read(0, lp); err != nil {
			return nil, err
		}
	}
	for s, st := range steps {
		if st.Sample {
			outs[s] = m.parseOut(raw[4*stride*s:4*stride*(s+1)], st, sp.before[s])
			if st.Sampling.Logprobs && outs[s].Err == nil {
				outs[s].Logprobs = m.parseLogprobs(lp, sp.seqs[s], st, len(outs[s].Tokens))
				if st.Score {
					outs[s].Scores = m.parseScores(lp, sp.seqs[s], st)
				}
			}
		}
	}
	return outs, nil
}

// parseLogprobs reads the logprobs of a sequence's n emitted tokens: token i < n-1 is row i's
// accepted draft, the last is row n-1's own token (recovered or bonus).
func (m *Model) parseLogprobs(lp []byte, si runtime.SeqInfo, st batch.SeqStep, n int) []batch.TokenLogprob {
	out := make([]batch.TokenLogprob, n)
	for i := range out {
		which := 0 // lp(draft)
		if i == n-1 {
			which = 1 // lp(tok)
		}
		out[i] = m.rowLogprob(lp, int(si.LogitRow0)+i, which, st.Sampling.TopLogprobs)
	}
	return out
}

// parseScores reads the logprobs of a sequence's drafts, each from its own row, accepted or
// not (batch.SeqStep.Score).
func (m *Model) parseScores(lp []byte, si runtime.SeqInfo, st batch.SeqStep) []batch.TokenLogprob {
	out := make([]batch.TokenLogprob, st.NDraft)
	for i := range out {
		out[i] = m.rowLogprob(lp, int(si.LogitRow0)+i, 0, st.Sampling.TopLogprobs)
	}
	return out
}

// rowLogprob reads logit row r's logprob of its draft (which 0) or its token (which 1), and
// its top likeliest tokens.
func (m *Model) rowLogprob(lp []byte, r, which, top int) batch.TokenLogprob {
	row := lp[4*runtime.LogprobStride*r:]
	word := func(w int) uint32 { return binary.LittleEndian.Uint32(row[4*w:]) }
	out := batch.TokenLogprob{Logprob: math.Float32frombits(word(which)), Rank: int(word(2 + which))}
	for k := range min(top, m.Cfg.Vocab) {
		out.Top = append(out.Top, batch.TopLogprob{Token: int(word(4 + 2*k)), Logprob: math.Float32frombits(word(5 + 2*k))})
	}
	return out
}

// describe names what a program runs, for Opts.FirstRun.
func (m *Model) describe(p *runtime.Program) string {
	switch p {
	case m.decode:
		return "decoding"
	case m.prefill:
		return "prompts"
	}
	for i, v := range m.verify {
		if v == p {
			return fmt.Sprintf("steps of up to %d rows", verifyRows[i])
		}
	}
	return "a step"
}

// preparedStep is a batch laid out for the device: its inputs are written, its pages reserved.
type preparedStep struct {
	prog   *runtime.Program
	step   runtime.StepBlock
	before []int             // each sequence's length before the step
	spans  []rowSpan         // where each sequence's rows went
	seqs   []runtime.SeqInfo // what the sampler was told of each sequence
	// logprobs: some sequence asked for them
	logprobs bool
}

// prepare reserves the batch's pages (checkBatch counted them) and writes its inputs: tokens,
// rows, attention blocks, sequences, page tables, the rows that sample, drafts and q.
func (m *Model) prepare(steps []batch.SeqStep) (*preparedStep, error) {
	c, o := m.Cfg, m.Opts
	rowsN := 0
	for _, st := range steps {
		rowsN += len(st.Tokens)
	}
	prog, blockRows, err := m.program(rowsN)
	if err != nil {
		return nil, err
	}
	attRows := runtime.AttentionBlockRows(blockRows, c.HeadDim)
	maxPages := (c.MaxSeq + o.PageSize - 1) / o.PageSize
	var (
		rows   []runtime.RowInfo
		tokens []uint32
		seqs   = make([]runtime.SeqInfo, len(steps))
		blocks []runtime.AttnBlock
		rowsel []uint32
		drafts []uint32
		qs     []float32
		masks  []uint32
		adj    []batch.Adj
		lp     bool
		pages  = make([]uint32, len(steps)*maxPages)
		before = make([]int, len(steps))
		spans  = make([]rowSpan, len(steps))
	)
	for s, st := range steps {
		pos0, n := st.Seq.Len(), len(st.Tokens)
		before[s] = pos0
		if err := st.Seq.Reserve(pos0 + n); err != nil { // checkBatch counted the pages: a broken invariant
			panic(fmt.Sprintf("model: reserve after the page check: %v", err))
		}
		for i, p := range st.Seq.Pages() {
			pages[s*maxPages+i] = uint32(p)
		}
		row0 := len(rows)
		spans[s] = rowSpan{row0: row0, pos0: pos0, n: n}
		for i, t := range st.Tokens {
			rows = append(rows, runtime.RowInfo{Seq: uint32(s), Pos: uint32(pos0 + i)})
			tokens = append(tokens, uint32(t))
		}
		for b := 0; b < n; b += attRows {
			blocks = append(blocks, runtime.AttnBlock{Row0: uint32(row0 + b), Rows: uint32(min(attRows, n-b))})
		}
		si := runtime.SeqInfo{PageOff: uint32(s * maxPages)}
		if st.Sample {
			nd, sm := st.NDraft, st.Sampling
			first := n - nd - 1 // the first row that samples
			si.Sampled, si.NDraft, si.LogitRow0 = 1, uint32(nd), uint32(len(rowsel))
			si.PosSample, si.DraftOff = uint32(pos0+first+1), uint32(len(drafts))
			si.SeedLo, si.SeedHi, si.SeqID = uint32(sm.Seed), uint32(sm.Seed>>32), sm.Choice
			si.Temperature, si.TopP, si.TopK = sm.Temperature, sm.TopP, uint32(sm.TopK)
			si.MinP, si.Presence, si.Frequency, si.Repetition = sm.MinP, sm.PresencePenalty, sm.FrequencyPenalty, sm.RepetitionPenalty
			si.AdjOff, si.AdjLen = uint32(len(adj)), uint32(len(st.Adj))
			adj = append(adj, st.Adj...)
			if sm.Logprobs {
				si.Logprobs, lp = 1+uint32(sm.TopLogprobs), true
			}
			for j := 0; j <= nd; j++ {
				rowsel = append(rowsel, uint32(row0+first+j))
			}
			for _, t := range st.Tokens[n-nd:] {
				drafts = append(drafts, uint32(t))
			}
			if st.Mask != nil {
				si.MaskOff = uint32(maskBase(o) + len(masks))
				masks = append(masks, st.Mask...)
			}
			if st.Q != nil { // q's rows are the drafts' (zeros for those of other sequences)
				si.HasQ = 1
				qs = append(qs, make([]float32, int(si.DraftOff)*c.Vocab-len(qs))...)
				qs = append(qs, st.Q...)
			}
		}
		seqs[s] = si
	}
	step := runtime.StepBlock{M: uint32(rowsN), NSeqs: uint32(len(steps)), LogitRows: uint32(len(rowsel)), NBlocks: uint32(len(blocks))}
	for _, si := range seqs {
		if si.Sampled != 0 && si.Temperature > 0 {
			step.DrawRows += si.NDraft + 1
		}
	}
	m.tokens.Write(0, runtime.U32Bytes(tokens))
	m.rows.Write(0, runtime.SliceBytes(rows))
	m.blocks.Write(0, runtime.SliceBytes(blocks))
	m.seqs.Write(0, runtime.SliceBytes(seqs))
	m.pageTable.Write(0, runtime.U32Bytes(pages))
	if len(rowsel) > 0 {
		m.rowsel.Write(0, runtime.U32Bytes(rowsel))
	}
	if len(drafts) > 0 {
		m.drafts.Write(0, runtime.U32Bytes(drafts))
	}
	if len(masks) > 0 {
		m.drafts.Write(uint64(4*maskBase(o)), runtime.U32Bytes(masks))
	}
	if len(qs) > 0 { // the sampler reads q only where a sequence has it
		m.q.Write(0, runtime.F32Bytes(qs))
	}
	if len(adj) > 0 {
		m.adj.Write(0, runtime.SliceBytes(adj))
	}
	return &preparedStep{prog: prog, step: step, before: before, spans: spans, seqs: seqs, logprobs: lp}, nil
}

// maskBase is where the token masks start in the drafts buffer (after room for every draft).
func maskBase(o Options) int { return o.MaxLogitRows }

// parseOut reads one sequence's [n, tokens...] (or [0, kind, row] for non-finite logits).
func (m *Model) parseOut(raw []byte, st batch.SeqStep, pos0 int) batch.StepOut {
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(raw[4*i:]) }
	n := int(word(0))
	if n == 0 {
		kind := map[uint32]string{1: "NaN", 2: "infinite", 3: "NaN and infinite"}[word(1)]
		pos := pos0 + len(st.Tokens) - st.NDraft - 1 + int(word(2))
		return batch.StepOut{Err: fmt.Errorf("%w: the model produced %s logits at position %d", batch.ErrNonFinite, kind, pos)}
	}
	if n > st.NDraft+1 {
		return batch.StepOut{Err: fmt.Errorf("model: sampler emitted %d tokens for %d drafts", n, st.NDraft)}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(word(i + 1))
		if out[i] >= m.Cfg.Vocab {
			return batch.StepOut{Err: fmt.Errorf("model: sampler emitted token id %d outside the vocabulary of %d", out[i], m.Cfg.Vocab)}
		}
	}
	return batch.StepOut{Tokens: out}
}

// checkBatch refuses a batch the step cannot run, before anything changes.
func (m *Model) checkBatch(steps []batch.SeqStep) error {
	c, o := m.Cfg, m.Opts
	if len(steps) == 0 || len(steps) > o.MaxSeqs {
		return fmt.Errorf("%w: %d sequences in a step (1..%d)", batch.ErrBadInput, len(steps), o.MaxSeqs)
	}
	rows, logitRows, pagesNeeded, adjN := 0, 0, 0, 0
	seen := map[*kv.Sequence]bool{}
	for _, st := range steps {
		n := len(st.Tokens)
		switch {
		case st.Seq == nil || seen[st.Seq]:
			return fmt.Errorf("%w: a sequence missing or twice in a step", batch.ErrBadInput)
		case n == 0:
			return fmt.Errorf("%w: no tokens", batch.ErrBadInput)
		case st.NDraft < 0 || st.NDraft > o.MaxDraft || st.NDraft >= n:
			return fmt.Errorf("%w: %d drafts among %d tokens (at most %d)", batch.ErrBadInput, st.NDraft, n, o.MaxDraft)
		case st.NDraft > 0 && !st.Sample:
			return fmt.Errorf("%w: drafts in a step that does not sample", batch.ErrBadInput)
		case st.Score && (!st.Sample || !st.Sampling.Logprobs):
			return fmt.Errorf("%w: a step that scores its drafts without sampling logprobs", batch.ErrBadInput)
		case st.Q != nil && !o.DraftQ:
			return fmt.Errorf("%w: drafts with q, but the model was made without Options.DraftQ", batch.ErrBadInput)
		case st.Q != nil && len(st.Q) != st.NDraft*c.Vocab:
			return fmt.Errorf("%w: q has %d values, want %d x %d", batch.ErrBadInput, len(st.Q), st.NDraft, c.Vocab)
		case st.Mask != nil && (!st.Sample || len(st.Mask) != (st.NDraft+1)*batch.MaskWords(c.Vocab)):
			return fmt.Errorf("%w: a mask of %d words for %d rows of vocabulary %d", batch.ErrBadInput, len(st.Mask), st.NDraft+1, c.Vocab)
		case st.Keep < 0 || int(st.Keep) > len(m.slots) || (st.Keep > 0 && !m.slots[st.Keep-1].used):
			return fmt.Errorf("%w: feature slot %d (the model has %d)", batch.ErrBadInput, st.Keep, len(m.slots))
		case st.Seq.Len()+n > c.MaxSeq:
			return fmt.Errorf("%w: %d tokens after this step, the context is %d", kv.ErrContextFull, st.Seq.Len()+n, c.MaxSeq)
		}
		for _, t := range st.Tokens {
			if t < 0 || t >= c.Vocab {
				return fmt.Errorf("%w: token id %d outside the vocabulary of %d", batch.ErrBadInput, t, c.Vocab)
			}
		}
		if st.Sample {
			adjN += len(st.Adj)
		}
		seen[st.Seq] = true
		rows += n
		if st.Sample {
			logitRows += st.NDraft + 1
		}
		pagesNeeded += st.Seq.PagesNeeded(st.Seq.Len() + n)
	}
	switch {
	case rows > o.PrefillChunk:
		return fmt.Errorf("%w: %d rows in a step (at most %d)", batch.ErrBadInput, rows, o.PrefillChunk)
	case logitRows > o.MaxLogitRows:
		return fmt.Errorf("%w: %d rows to sample in a step (at most %d)", batch.ErrBadInput, logitRows, o.MaxLogitRows)
	case adjN > m.adjCap:
		return fmt.Errorf("%w: %d logit adjustments in a step (at most %d)", batch.ErrBadInput, adjN, m.adjCap)
	case pagesNeeded > m.Pool().Free():
		return fmt.Errorf("%w: the step needs %d pages, %d are free", kv.ErrPoolExhausted, pagesNeeded, m.Pool().Free())
	}
	return nil
}

// Forward runs tokens for one sequence (the last nDraft of them drafts, with draft
// probabilities q [nDraft, vocab] or nil for one-hot) and returns the accepted drafts followed
// by one recovered or bonus token (one sampled token without drafts): Step for a batch of one,
// a long input in steps of PrefillChunk tokens (the drafts and the token before them always
// in the last). A failed step leaves the cache as it was.
func (m *Model) Forward(seq *kv.Sequence, tokens []int, nDraft int, q []float32, s batch.Sampling) ([]int, error) {
	return m.forward(seq, 0, tokens, nDraft, q, s)
}

// forward is Forward keeping the sequence's features in slot keep (0: none).
func (m *Model) forward(seq *kv.Sequence, keep batch.Slot, tokens []int, nDraft int, q []float32, s batch.Sampling) ([]int, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: no tokens", batch.ErrBadInput)
	}
	if nDraft < 0 || nDraft >= len(tokens) {
		return nil, fmt.Errorf("%w: %d drafts among %d tokens", batch.ErrBadInput, nDraft, len(tokens))
	}
	if end := seq.Len() + len(tokens); end > m.Cfg.MaxSeq {
		return nil, fmt.Errorf("%w: %d tokens after this step, the context is %d", kv.ErrContextFull, end, m.Cfg.MaxSeq)
	}
	before, chunk := seq.Len(), m.Opts.PrefillChunk
	for start := 0; start < len(tokens); {
		end := min(len(tokens), start+chunk)
		if end < len(tokens) && len(tokens)-end < nDraft+1 {
			end = len(tokens) - nDraft - 1 // the drafts and the token before them share the last chunk
		}
		last := end == len(tokens)
		st := batch.SeqStep{Seq: seq, Tokens: tokens[start:end], Sample: last, Sampling: s, Keep: keep}
		if last {
			st.NDraft, st.Q = nDraft, q
		}
		out, err := m.Step([]batch.SeqStep{st})
		if err != nil {
			seq.Truncate(before)
			return nil, err
		}
		if last {
			if out[0].Err != nil {
				seq.Truncate(before)
				return nil, out[0].Err
			}
			return out[0].Tokens, nil
		}
		start = end
	}
	panic("model: Forward ended without its last chunk")
}
