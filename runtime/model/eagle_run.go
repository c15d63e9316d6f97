package model

import (
	"encoding/binary"
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
)

// EagleDraft is one sequence's part of an Eagle.Draft call.
type EagleDraft struct {
	Seq *EagleSeq
	Ctx []int // the sequence so far (prompt and output); the drafts follow it
	K   int   // drafts at most (the head drafts at most the target's MaxDraft)
	// Sampling is how the target samples the sequence: at a temperature, the head samples
	// its drafts from softmax(logits / T) with the target's key and noise at each draft's
	// position (draw.go), and returns that distribution in Q; greedy, it takes the argmax (Q nil).
	Sampling batch.Sampling
	Out      []int     // set by Draft
	Q        []float32 // set by Draft when sampling: [len(Out), target vocab], row j draft j's distribution
}

// eaglePlan is what Draft encodes for one request.
type eaglePlan struct {
	catch                                int    // catch-up rows (0: none)
	local0                               int    // cache row of the first catch-up row
	featOff                              uint64 // the catch-up's first feature row in the target's slots
	k                                    int    // depths drafted (0: catch-up only)
	offTok, offPages, offCatch, offDepth uint64
	offDraw                              uint64 // the programs' draw params, drawParamBytes each
	pages                                int
	invT                                 float32 // 1/T when sampling, else 0
}

// Draft drafts for every request, all of them in one submit with one readback of the draft
// ids. For each sequence it first runs the catch-up: the head's rows of the positions from
// its cache's end up to len(Ctx)-2, whose next tokens are known and whose features the
// target's last step of that sequence kept in its feature slot; the last catch-up row gives
// the first draft. Then it runs the other depths, each fed the previous depth's token and
// output. The sequences' inputs (tokens, page tables, Step blocks) go up in one write and
// reach the shared activations by copies in the submit's order, so the sequences run one
// after another on the device without a submit each.
//
// The head uses only features the slot holds (its sequence's recent steps' rows, up to a
// prefill chunk: model/features.go): after a chunked prefill, or more steps without drafts
// than fit, the earlier positions have none, and the cache then restarts at the slot's first
// position (its RoPE positions counted from there, which leaves attention scores unchanged).
// The drafts are guesses either way; the target's verification keeps the output exact. A
// sequence drafts nothing when its slot lacks the newest position's feature.
// Asking again for the same context returns the same drafts.
func (e *Eagle) Draft(reqs []EagleDraft) error {
	if len(reqs) > e.t.Opts.MaxSeqs {
		return fmt.Errorf("%w: %d EAGLE drafts in one call (at most %d)", batch.ErrBadInput, len(reqs), e.t.Opts.MaxSeqs)
	}
	plans := make([]eaglePlan, len(reqs))
	var blob []byte
	put := func(b []byte) uint64 { off := uint64(len(blob)); blob = append(blob, b...); return off }
	work, sampled := false, false
	for i := range reqs {
		r := &reqs[i]
		r.Out, r.Q = nil, nil
		s := r.Seq
		if len(r.Ctx) == s.synced && s.cache != nil { // the same context as the last call
			r.Out = s.cache[:min(r.K, len(s.cache))]
			if s.cacheQ != nil {
				r.Q = s.cacheQ[:len(r.Out)*e.t.Cfg.Vocab]
			}
			continue
		}
		p, toks, err := s.plan(r.Ctx, min(r.K, e.maxK))
		if err != nil {
			return err
		}
		if p.catch == 0 {
			continue
		}
		pages := make([]uint32, len(s.seq.Pages()))
		for j, pg := range s.seq.Pages() {
			pages[j] = uint32(pg)
		}
		p.pages = len(pages)
		p.offTok = put(runtime.U32Bytes(toks))
		p.offPages = put(runtime.U32Bytes(pages))
		p.offCatch = put(runtime.ParamBytes(runtime.StepBlock{M: uint32(p.catch), Pos0: uint32(p.local0)}))
		p.offDepth = uint64(len(blob))
		local := p.local0 + p.catch
		for j := 1; j < p.k; j++ {
			put(runtime.ParamBytes(runtime.StepBlock{M: 1, Pos0: uint32(local + j - 1)}))
		}
		if t := r.Sampling.Temperature; t > 0 && p.k > 0 {
			p.invT = 1 / t
			sampled = true
		}
		p.offDraw = uint64(len(blob))
		for j := 0; j < max(p.k, 1); j++ { // the catch-up's, then each depth's
			put(drawParams(p.invT, r.Sampling, len(r.Ctx)+j))
		}
		plans[i] = p
		work = true
	}
	if !work {
		return nil
	}
	b := &e.bufs
	if sampled {
		if err := b.q.ensure(e.d, "eagle.logits staging", e.vOut, e.maxK*e.t.Opts.MaxSeqs); err != nil {
			return err
		}
	}
	b.in.Write(0, blob)
	enc := e.d.NewEncoder()
	H := uint64(4 * e.cfg.Dim)
	rowBytes := uint64(4 * e.featW)
	for i, p := range plans {
		if p.catch == 0 {
			continue
		}
		enc.Copy(b.in, p.offTok, b.tok, 0, uint64(4*p.catch))
		enc.Copy(b.in, p.offPages, b.pageTable, 0, uint64(4*p.pages))
		enc.Copy(e.t.feat, p.featOff, b.fin, 0, uint64(p.catch)*rowBytes)
		prog := e.catchM
		if p.catch > 9 {
			prog = e.catchT
		}
		keepLogits := func(j int) { // a sampled draft's distribution is read back
			if p.invT > 0 {
				b.q.keep(enc, b.logits, 0, i*e.maxK+j)
			}
		}
		enc.Copy(b.in, p.offDraw, b.draw, 0, drawParamBytes)
		prog.EncodeFrom(enc, &runtime.StepBlock{M: uint32(p.catch)}, b.in, p.offCatch)
		keepLogits(0)
		enc.Copy(b.x, uint64(p.catch-1)*H, b.fin, 0, H) // the last row's output feeds depth 2
		for j := 1; j < p.k; j++ {
			enc.Copy(b.ids, uint64(4*(j-1)), b.tok, 0, 4)
			enc.Copy(b.in, p.offDraw+uint64(j*drawParamBytes), b.draw, 0, drawParamBytes)
			e.depths[j-1].EncodeFrom(enc, &runtime.StepBlock{M: 1}, b.in, p.offDepth+uint64((j-1)*runtime.StepBlockBytes))
			keepLogits(j)
			enc.Copy(b.x, 0, b.fin, 0, H)
		}
		if p.k > 0 {
			enc.Copy(b.ids, 0, b.staging, uint64(4*i*e.maxK), uint64(4*p.k))
		}
	}
	if err := enc.Submit(); err != nil {
		return err
	}
	raw := make([]byte, 4*len(reqs)*e.maxK)
	if err := b.staging.Read(0, raw); err != nil {
		return err
	}
	var logits []byte
	if sampled {
		var err error
		if logits, err = b.q.read(len(reqs) * e.maxK); err != nil {
			return err
		}
	}
	for i, p := range plans {
		if p.k == 0 {
			continue
		}
		r := &reqs[i]
		drafts := make([]int, p.k)
		for j := range drafts {
			drafts[j] = int(binary.LittleEndian.Uint32(raw[4*(i*e.maxK+j):]))
			if drafts[j] >= e.t.Cfg.Vocab {
				return fmt.Errorf("model: eagle drafted id %d outside the vocabulary of %d", drafts[j], e.t.Cfg.Vocab)
			}
		}
		r.Seq.cache, r.Seq.cacheQ, r.Out = drafts, nil, drafts[:min(r.K, len(drafts))]
		if p.invT > 0 {
			q := b.q.q(logits, i*e.maxK, p.k, p.invT, e.d2t, e.t.Cfg.Vocab)
			r.Seq.cacheQ, r.Q = q, q[:len(r.Out)*e.t.Cfg.Vocab]
		}
	}
	return nil
}

// plan updates the sequence's state for a Draft of ctx: it drops the rows the last call
// drafted, reserves the catch-up's and the depths' rows, and returns what to encode with the
// catch-up's tokens. p.catch is 0 when there is nothing to catch up on (no drafts then).
func (s *EagleSeq) plan(ctx []int, k int) (p eaglePlan, toks []uint32, err error) {
	e := s.e
	N := len(ctx)
	if N == 0 {
		return p, nil, fmt.Errorf("%w: empty context", batch.ErrBadInput)
	}
	s.cache, s.synced = nil, N
	keep := max(0, min(s.committed, N-1)-s.base)
	s.seq.Truncate(keep)
	s.committed = s.base + keep
	pos0, rows := e.t.SlotRows(s.slot)
	end := min(N-1, pos0+rows) // positions < end have a feature and a known next token
	if end <= s.committed {
		return p, nil, nil
	}
	if s.committed < pos0 { // a gap: restart the cache at the first position with a feature
		if end <= pos0 {
			return p, nil, nil
		}
		s.seq.Truncate(0)
		s.base, s.committed = pos0, pos0
	}
	m := end - s.committed
	toks = make([]uint32, m)
	for i, t := range ctx[s.committed+1 : end+1] {
		if t < 0 || t >= e.t.Cfg.Vocab {
			return p, nil, fmt.Errorf("%w: token id %d outside the vocabulary of %d", batch.ErrBadInput, t, e.t.Cfg.Vocab)
		}
		toks[i] = uint32(t)
	}
	if end < N-1 { // the newest position's feature is missing: catch up, draft nothing
		k = 0
	}
	local := s.committed - s.base
	if err := s.seq.Reserve(local + m + max(k-1, 0)); err != nil {
		return p, nil, err
	}
	_, featOff := e.t.SlotBuffer(s.slot, s.committed)
	p = eaglePlan{catch: m, local0: local, featOff: featOff, k: max(k, 0)}
	s.seq.Commit(local + m + max(k-1, 0))
	s.committed = end
	return p, toks, nil
}

// CacheLen is the number of rows in the head's KV cache and the position of row 0.
func (s *EagleSeq) CacheLen() (rows, base int) { return s.seq.Len(), s.base }

// inBytes is the size of Draft's input buffer: per sequence, the catch-up's tokens, the page
// table, the Step blocks and the draw params.
func (e *Eagle) inBytes() uint64 {
	per := 4*e.t.Opts.PrefillChunk + 4*e.pagesPerSeq() + runtime.StepBlockBytes*e.maxK + drawParamBytes*e.maxK
	return uint64(e.t.Opts.MaxSeqs * per)
}

// pagesPerSeq is the most pages one sequence's head cache holds: a full context and drafts.
func (e *Eagle) pagesPerSeq() int {
	ps := e.t.Opts.PageSize
	return (e.t.Cfg.MaxSeq+e.maxK+ps-1)/ps + 1
}
