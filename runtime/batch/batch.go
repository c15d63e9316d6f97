// Package batch is the contract of one step of a model: the sequences it runs (each its new
// tokens, drafts to verify and sampling settings), and what comes back (the emitted tokens,
// their logprobs). The device model (runtime/model) runs steps; the reference (runtime/ref)
// runs them in pure Go; the scheduler (spec/sched) plans them. It is pure Go, so the
// scheduler and its tests need no device.
package batch

import (
	"errors"

	"github.com/wspec/wspec/runtime/kv"
)

// ErrBadInput is wrapped by errors about a step's shape (too many rows, drafts in a step that
// does not sample, a token outside the vocabulary). User-settable values are validated where
// they enter (spec/engine), not here.
var ErrBadInput = errors.New("bad input")

// ErrNonFinite is wrapped by the error of a step whose logits hold a NaN or an infinity
// (broken weights, or an overflow): nothing is sampled from them.
var ErrNonFinite = errors.New("non-finite logits")

// SeqStep is one sequence's part of a batched step: its new tokens, at positions
// Seq.Len().., the last NDraft of them drafts to verify.
type SeqStep struct {
	Seq    *kv.Sequence
	Tokens []int
	NDraft int
	// Q is [NDraft, vocab]: row j is the distribution draft j was sampled from, so the
	// rejection sampler keeps it with probability min(1, p/q) and recovers from
	// normalize(max(p - q, 0)); nil means one-hot on the drafts (argmax or lookup drafters).
	Q []float32
	// Mask, for a step that samples under a grammar (structured outputs), is [NDraft+1,
	// MaskWords(vocab)] words: row j the tokens allowed after the drafts before it (bit t%32 of
	// word t/32). The sampler sets the other tokens' logits to Masked after the processors, and
	// a draft's q row is renormalised over its row's allowed tokens. nil: no constraint.
	Mask     []uint32
	Sample   bool // sample after the tokens (false: a prompt chunk that does not end the prompt)
	Sampling Sampling
	// Adj lists, once each, the tokens whose logits the sequence adjusts: those with a logit
	// bias, and for the penalties those in the prompt or generated before this step (with
	// their count among the generated). Adjustments keeps it.
	Adj []Adj
	// Keep names the feature slot the step copies this sequence's feature rows into (a named
	// output a drafter reads after the step; 0: none). See Slot.
	Keep Slot
	// Score marks the drafts as known tokens to score (a prompt's), not guesses: the step
	// returns each draft's logprob in StepOut.Scores, accepted or not. It needs Sample and
	// Sampling.Logprobs; the caller keeps what it wants of the cache and ignores Tokens.
	Score bool
}

// MaskWords is the length in 32-bit words of one row's token mask over a vocabulary.
func MaskWords(vocab int) int { return (vocab + 31) / 32 }

// Masked is the logit of a token a mask leaves out: after it no finite logit is lower, and
// its probability is exactly 0 (finite: WGSL may assume there are no infinities).
const Masked = -1e30

// Slot names one of a model's feature slots: buffers, one per drafting sequence, into which a
// step copies that sequence's rows of the features its drafter reads (the hidden state after
// the last layer, or the residual streams entering some layers). They are the step's output,
// not scratch: nothing but a later step of the same sequence overwrites them. 0 is no slot.
type Slot int

// StepOut is one sequence's result: the accepted drafts followed by one recovered or bonus
// token (one sampled token without drafts), nil when it did not sample, or the error of its
// logits (ErrNonFinite). With Sampling.Logprobs, Logprobs holds each token's; with Score,
// Scores holds each draft's (NDraft of them, row j's logprob of draft j).
type StepOut struct {
	Tokens   []int
	Logprobs []TokenLogprob
	Scores   []TokenLogprob
	Err      error
}

// TokenLogprob is an emitted token's log-probability (log-softmax of its row's logits after
// the processors, at temperature 1), its rank in the row (1 + the tokens of higher logits) and
// the row's likeliest tokens with theirs.
type TokenLogprob struct {
	Logprob float32
	Rank    int
	Top     []TopLogprob
}

// TopLogprob is one of a row's likeliest tokens.
type TopLogprob struct {
	Token   int
	Logprob float32
}

// Limits are what one step of a model takes.
type Limits struct {
	MaxSeq, Vocab int // context length, vocabulary
	MaxSeqs       int // sequences in a step
	MaxLogitRows  int // rows sampled in a step, all sequences
	MaxDraft      int // drafts one sequence verifies in a step
	StepRows      int // rows in a step, all sequences
	// How a step's rows run: a step of up to BlockRows[i] rows (ascending) as one block of
	// that height; more in blocks of ChunkRows. Each block reads the weights once.
	BlockRows []int
	ChunkRows int
	// NoDraftQ: the step has no room for drafts' distributions (SeqStep.Q), so drafts that
	// come with one are not verified. A model keeps that room only for a drafter that returns
	// q (runtime/model's Options.DraftQ); the zero value takes them.
	NoDraftQ bool
}

// Blocks is how a step of n rows runs: in blocks blocks that compute computed rows in all
// (n padded up to a block's height). Without BlockRows: one block of n rows.
func (l Limits) Blocks(n int) (blocks, computed int) {
	for _, h := range l.BlockRows {
		if n <= h {
			return 1, h
		}
	}
	if len(l.BlockRows) == 0 || l.ChunkRows < 1 {
		return 1, n
	}
	blocks = (n + l.ChunkRows - 1) / l.ChunkRows
	return blocks, blocks * l.ChunkRows
}
