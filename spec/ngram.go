package spec

import (
	"fmt"
	"slices"

	"github.com/wspec/wspec/weights"
)

func init() {
	Register("ngram", func(cfg Config, _ *weights.Config) (Checkpoint, error) {
		if _, err := NewNgram(cfg.PromptLookupMin, cfg.PromptLookupMax); err != nil {
			return nil, err
		}
		return stateless{name: "ngram", make: func() Drafter {
			g, _ := NewNgram(cfg.PromptLookupMin, cfg.PromptLookupMax)
			return g
		}}, nil
	})
}

// Ngram is prompt lookup decoding (vLLM's "ngram" method): the text often repeats itself
// (code, quotes, lists, a small model stuck in a loop), so the tokens that followed an
// earlier occurrence of the last few tokens are a good guess of what comes next. It needs no
// model and proposes one-hot drafts (q nil).
type Ngram struct {
	Min, Max int // n-gram sizes tried, from Max down to Min
}

// NewNgram returns an ngram drafter; zero sizes take the defaults 1 and max(3, min).
func NewNgram(minN, maxN int) (*Ngram, error) {
	if minN == 0 {
		minN = DefaultPromptLookupMin
	}
	if maxN == 0 {
		maxN = max(DefaultPromptLookupMax, minN)
	}
	if minN < 1 || maxN < minN {
		return nil, fmt.Errorf("need 1 <= prompt_lookup_min <= prompt_lookup_max, got %d and %d", minN, maxN)
	}
	return &Ngram{Min: minN, Max: maxN}, nil
}

// Name is "ngram".
func (g *Ngram) Name() string { return "ngram" }

// Propose looks, for n from Max down to Min, for the most recent earlier occurrence of the
// last n tokens of ctx, and proposes the k tokens that followed it. When that occurrence is
// so recent that fewer than k tokens follow it before the end of ctx (the match at distance
// p < k), the continuation wraps around: the last p tokens are taken to repeat with period p,
// as they do in a loop. No match at any n: no drafts.
func (g *Ngram) Propose(ctx []int, k int) ([]int, []float32, error) {
	L := len(ctx)
	if k <= 0 {
		return nil, nil, nil
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
			return drafts, nil, nil
		}
	}
	return nil, nil, nil
}

// Accept does nothing: the drafter keeps no state between steps.
func (g *Ngram) Accept(ctx []int) error { return nil }

// Release does nothing: the drafter holds nothing.
func (g *Ngram) Release() {}
