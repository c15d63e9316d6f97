// Package spec is speculative decoding: drafters propose k tokens, the target model verifies
// them in one forward pass, and the device's rejection sampler keeps a prefix so that the output
// distribution is exactly the target's. It also holds the Go API the CLI is a thin layer over.
package spec

import "github.com/wspec/wspec/runtime/model"

// Target is what the loop needs of the target model on one sequence. *model.Session is the
// device implementation; tests use a pure-Go fake over runtime/ref.
type Target interface {
	// Forward appends tokens to the KV cache (the last nDraft are drafts, with draft
	// probabilities q [nDraft, vocab] or nil for one-hot), and returns the accepted drafts
	// followed by one recovered or bonus token (just one sampled token when nDraft is 0).
	Forward(tokens []int, nDraft int, q []float32, s model.Sampling) ([]int, error)
	// Len is the number of tokens in the KV cache.
	Len() int
	// Truncate drops the KV cache past n tokens.
	Truncate(n int)
	Vocab() int
	MaxSeq() int
}

var _ Target = (*model.Session)(nil)
