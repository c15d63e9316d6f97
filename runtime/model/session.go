package model

import "github.com/wspec/wspec/runtime"

// Session is one sequence on a model: the unit the speculative loop drives.
type Session struct {
	m   *Model
	seq *runtime.Sequence
}

// NewSession starts an empty sequence on the model's page pool.
func (m *Model) NewSession() *Session { return &Session{m: m, seq: m.Pool.NewSequence()} }

// Forward runs tokens (the last nDraft of them drafts) and returns the emitted tokens; see
// Model.Forward.
func (s *Session) Forward(tokens []int, nDraft int, q []float32, smp Sampling) ([]int, error) {
	return s.m.Forward(s.seq, tokens, nDraft, q, smp)
}

// DecodeChain feeds tokens and decodes k tokens greedily in one submit; see
// Model.DecodeChain.
func (s *Session) DecodeChain(tokens []int, k int) ([]int, error) {
	return s.m.DecodeChain(s.seq, tokens, k)
}

// Len is the number of tokens in the session's KV cache.
func (s *Session) Len() int { return s.seq.Len() }

// Truncate drops the cache past n tokens (rejected drafts), freeing whole pages.
func (s *Session) Truncate(n int) { s.seq.Truncate(n) }

// Release frees every page of the session.
func (s *Session) Release() { s.seq.Release() }

// Vocab is the model's vocabulary size.
func (s *Session) Vocab() int { return s.m.Cfg.Vocab }

// MaxSeq is the model's context length.
func (s *Session) MaxSeq() int { return s.m.Cfg.MaxSeq }

// Fork returns a new session sharing this one's KV pages (reference counted); the first write
// into a shared page copies it, so the two sequences can go on differently (parallel samples
// of one prompt, beam search).
func (s *Session) Fork() *Session { return &Session{m: s.m, seq: s.seq.Fork()} }

// Sequence is the session's sequence in the page pool (for batched steps: Model.Step).
func (s *Session) Sequence() *runtime.Sequence { return s.seq }
