package model

import (
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
)

// Session is one sequence on a model with the one-sequence calls tests, calibration and
// benchmarks use; the scheduler runs sequences through Step.
type Session struct {
	m   *Model
	seq *kv.Sequence
	// Keep, when set, is the feature slot Forward's steps copy the sequence's features into.
	Keep batch.Slot
}

// NewSession starts an empty sequence on the model's page pool.
func (m *Model) NewSession() *Session { return &Session{m: m, seq: m.Pool().NewSequence()} }

// Forward runs tokens (the last nDraft of them drafts) and returns the emitted tokens; see
// Model.Forward.
func (s *Session) Forward(tokens []int, nDraft int, q []float32, smp batch.Sampling) ([]int, error) {
	return s.m.forward(s.seq, s.Keep, tokens, nDraft, q, smp)
}

// Len is the number of tokens in the session's KV cache.
func (s *Session) Len() int { return s.seq.Len() }

// Truncate drops the cache past n tokens (rejected drafts), freeing whole pages.
func (s *Session) Truncate(n int) { s.seq.Truncate(n) }

// Release frees every page of the session.
func (s *Session) Release() { s.seq.Release() }

// Sequence is the session's sequence in the page pool (for batched steps: Model.Step).
func (s *Session) Sequence() *kv.Sequence { return s.seq }
