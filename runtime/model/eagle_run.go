package model

import (
	"encoding/binary"
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
)

// Sync tells the head the sequence is now ctx, right after a target step on it (the
// target's Hidden/Aux buffers hold that step's rows). It drops the rows the last Draft
// added, then runs the catch-up: the draft rows of the positions from the cache's end up to
// len(ctx)-2, whose next tokens are known and whose features the target's last step holds,
// in one submit that also leaves the first draft's id and output on the device. Nothing is
// read back.
//
// The head can only use features the target's LAST step computed: after a chunked prefill
// (or any step Sync did not see), the positions before that step have none, and the cache
// then restarts at the step's first position (its RoPE positions counted from there, which
// leaves attention scores unchanged). The drafts are guesses either way; the target's
// verification keeps the output exact.
func (s *EagleSeq) Sync(ctx []int) error {
	enc := s.e.d.NewEncoder()
	if encoded, err := s.syncInto(enc, ctx); err != nil || !encoded {
		return err
	}
	return enc.Submit()
}

// syncInto is Sync encoding the catch-up into enc (the caller submits it when encoded is
// true); the head's state already counts the catch-up when it returns.
func (s *EagleSeq) syncInto(enc *webgpu.Encoder, ctx []int) (encoded bool, err error) {
	e := s.e
	N := len(ctx)
	if N == 0 {
		return false, fmt.Errorf("%w: empty context", ErrBadInput)
	}
	s.ready, s.cache, s.synced = false, nil, N
	keep := max(0, min(s.committed, N-1)-s.base)
	s.seq.Truncate(keep)
	s.committed = s.base + keep
	row0, pos0, rows := s.target.LastRows()
	end := min(N-1, pos0+rows) // positions < end have a feature and a known next token
	if end <= s.committed {
		return false, nil
	}
	if s.committed < pos0 { // a gap: restart the cache at the first position with a feature
		if end <= pos0 {
			return false, nil
		}
		s.seq.Truncate(0)
		s.base, s.committed = pos0, pos0
	}
	m := end - s.committed
	if m > e.t.Opts.PrefillChunk {
		return false, fmt.Errorf("runtime: eagle catch-up of %d rows exceeds the chunk of %d", m, e.t.Opts.PrefillChunk)
	}
	toks := make([]uint32, m)
	for i, t := range ctx[s.committed+1 : end+1] {
		if t < 0 || t >= e.t.Cfg.Vocab {
			return false, fmt.Errorf("%w: token id %d outside the vocabulary of %d", ErrBadInput, t, e.t.Cfg.Vocab)
		}
		toks[i] = uint32(t)
	}
	local := s.committed - s.base
	if err := s.reserve(local + m); err != nil {
		return false, err
	}
	b := &e.bufs
	b.tok.Write(0, runtime.U32Bytes(toks))
	src := e.t.x // EAGLE-1: the residual after the last layer (normed by fc_f's fusion)
	if e.kind == weights.EagleKind3 {
		src = e.t.aux // the residuals entering the aux layers, side by side
	}
	rowBytes := uint64(4 * e.featW)
	enc.Copy(src, uint64(row0+s.committed-pos0)*rowBytes, b.fin, 0, uint64(m)*rowBytes)
	prog := e.catchM
	if m > 9 {
		prog = e.catchT
	}
	prog.Encode(enc, &runtime.StepBlock{M: uint32(m), Pos0: uint32(local)}, nil)
	H := uint64(4 * e.cfg.Dim)
	enc.Copy(b.x, uint64(m-1)*H, b.fin, 0, H) // the last row's output feeds depth 2
	s.seq.Commit(local + m)
	s.committed = end
	s.ready = end == N-1
	return true, nil
}

// reserve grows the cache to n rows and writes the page table.
func (s *EagleSeq) reserve(n int) error {
	e := s.e
	if _, err := s.seq.Reserve(n); err != nil {
		return err
	}
	pages := make([]uint32, len(s.seq.Pages()))
	for i, p := range s.seq.Pages() {
		pages[i] = uint32(p)
	}
	e.bufs.pageTable.Write(0, runtime.U32Bytes(pages))
	return nil
}

// Draft proposes up to k tokens (at most the target's MaxDraft) to follow ctx, greedily: the
// catch-up's first draft and k-1 more depths, all in one submit, reading back only the ids.
// When ctx is not the context of the last Sync, the catch-up goes in that same submit. It
// returns no drafts when the head has not seen the features of the last position (nothing to
// draft from). Calling it again for the same context returns the same drafts.
func (s *EagleSeq) Draft(ctx []int, k int) ([]int, error) {
	e := s.e
	var enc *webgpu.Encoder // holds the catch-up, when there is one, for the drafts' submit
	if len(ctx) != s.synced {
		enc = e.d.NewEncoder()
		encoded, err := s.syncInto(enc, ctx)
		if err != nil || !encoded {
			enc.Discard()
			enc = nil
		}
		if err != nil {
			return nil, err
		}
	}
	if s.cache != nil { // the same context as the last Draft (no catch-up then)
		return s.cache[:min(k, len(s.cache))], nil
	}
	k = min(k, e.maxK)
	if !s.ready || k <= 0 {
		if enc != nil {
			return nil, enc.Submit()
		}
		return nil, nil
	}
	if enc == nil {
		enc = e.d.NewEncoder()
	}
	local := s.committed - s.base
	if k > 1 {
		if err := s.reserve(local + k - 1); err != nil {
			return nil, err
		}
	}
	b := &e.bufs
	H := uint64(4 * e.cfg.Dim)
	for j := 1; j < k; j++ {
		enc.Copy(b.ids, uint64(4*(j-1)), b.tok, 0, 4)
		e.depths[j-1].Encode(enc, &runtime.StepBlock{M: 1, Pos0: uint32(local + j - 1)}, nil)
		enc.Copy(b.x, 0, b.fin, 0, H)
	}
	enc.Copy(b.ids, 0, b.staging, 0, uint64(4*k))
	if err := enc.Submit(); err != nil {
		return nil, err
	}
	s.seq.Commit(local + k - 1)
	s.ready = false
	raw := make([]byte, 4*k)
	if err := b.staging.Read(0, raw); err != nil {
		return nil, err
	}
	drafts := make([]int, k)
	for i := range drafts {
		drafts[i] = int(binary.LittleEndian.Uint32(raw[4*i:]))
		if drafts[i] >= e.t.Cfg.Vocab {
			return nil, fmt.Errorf("runtime: eagle drafted id %d outside the vocabulary of %d", drafts[i], e.t.Cfg.Vocab)
		}
	}
	s.cache = drafts
	return drafts, nil
}

// CacheLen is the number of rows in the head's KV cache and the position of row 0.
func (s *EagleSeq) CacheLen() (rows, base int) { return s.seq.Len(), s.base }
