package spec

import (
	"slices"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/weights"
)

func init() {
	Register("ngram", func(cfg Config, _ *weights.Config) (Checkpoint, error) {
		return &Ngram{Min: cfg.PromptLookupMin, Max: cfg.PromptLookupMax}, nil
	})
}

// Ngram is prompt lookup decoding (vLLM's "ngram" method): the text often repeats itself
// (code, quotes, lists, a small model stuck in a loop), so the tokens that followed an
// earlier occurrence of the last few tokens are a good guess of what comes next. It needs no
// model and keeps no state: it is its own Checkpoint, Method and Drafter, and proposes
// one-hot drafts (Q nil).
type Ngram struct {
	Min, Max int // n-gram sizes tried, from Max down to Min (Config.Validate checks them)
}

func (g *Ngram) Name() string                 { return "ngram" }
func (g *Ngram) Needs() Needs                 { return Needs{} }
func (g *Ngram) NewDrafter() (Drafter, error) { return g, nil }
func (g *Ngram) Keep() batch.Slot             { return 0 }
func (g *Ngram) Accept([]int) error           { return nil }
func (g *Ngram) Release()                     {}

// Propose looks up each proposal's drafts (Lookup).
func (g *Ngram) Propose(ps []Proposal) error {
	for i := range ps {
		ps[i].Drafts, ps[i].Q = g.Lookup(ps[i].Ctx, ps[i].K), nil
	}
	return nil
}

// Lookup looks, for n from Max down to Min, for the most recent earlier occurrence of the
// last n tokens of ctx, and returns the k tokens that followed it. When that occurrence is so
// recent that fewer than k tokens follow it before the end of ctx (the match at distance
// p < k), the continuation wraps around: the last p tokens are taken to repeat with period p,
// as they do in a loop. No match at any n: no drafts.
func (g *Ngram) Lookup(ctx []int, k int) []int {
	L := len(ctx)
	if k <= 0 {
		return nil
	}
	for n := min(g.Max, L-1); n >= g.Min; n-- {
		suffix := ctx[L-n:]
		for i := L - n - 1; i >= 0; i-- { // the occurrence ctx[i:i+n], most recent first
			if !slices.Equal(ctx[i:i+n], suffix) {
				continue
			}
			drafts := make([]int, k)
			for j := range drafts {
				if src := i + n + j; src < L {
					drafts[j] = ctx[src]
				} else {
					drafts[j] = drafts[src-L] // past the end: the drafts themselves
				}
			}
			return drafts
		}
	}
	return nil
}
