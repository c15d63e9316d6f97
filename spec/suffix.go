package spec

import (
	"sync"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/weights"
)

func init() {
	Register("suffix", func(cfg Config, _ *weights.Config) (Checkpoint, error) {
		return NewSuffix(cfg), nil
	})
}

// Defaults of the suffix method's options (vLLM's suffix_decoding_* keys).
const (
	DefaultSuffixMaxTreeDepth      = 24
	DefaultSuffixMaxCachedRequests = 10000
	DefaultSuffixMaxSpecFactor     = 1.0
	DefaultSuffixMinTokenProb      = 0.1
	// suffixMaxNodes bounds the global tree (about 64 bytes a node): past it, the oldest
	// cached requests are forgotten first, as past MaxCachedRequests.
	suffixMaxNodes = 4 << 20
)

// Suffix is suffix decoding (SuffixDecoding, Arctic Inference; vLLM's "suffix" method):
// drafts come from suffix trees of tokens already seen, with no model. Each sequence has a
// tree of its own prompt and output; the method keeps a global tree of the outputs of the
// last MaxCachedRequests sequences, so a workload that repeats itself across requests (an
// agent's tool calls, code edited over a session) drafts from what earlier requests wrote.
// At each step the longest suffix of the sequence (up to MaxTreeDepth - 1 tokens) that the
// trees hold is matched, and the likeliest continuation by the trees' counts is followed
// while its estimated probability stays at least MinTokenProb, for at most MaxSpecFactor x
// the match's length tokens (and the step's k): so it drafts deep where matches are long and
// frequent and not at all where they are not, which the adaptive planner then sizes further.
// Drafts are one-hot (Q nil), so the rejection sampler keeps the output exactly the target's.
type Suffix struct {
	MaxTreeDepth      int
	MaxCachedRequests int
	MaxSpecFactor     float64
	MinTokenProb      float64

	mu     sync.Mutex // guards the global tree: drafters of many sequences share it
	global *suffixTree
	cached [][]int // the outputs in global, oldest first
}

// NewSuffix makes the method of a validated config.
func NewSuffix(cfg Config) *Suffix {
	return &Suffix{MaxTreeDepth: cfg.SuffixMaxTreeDepth, MaxCachedRequests: *cfg.SuffixMaxCachedRequests,
		MaxSpecFactor: cfg.SuffixMaxSpecFactor, MinTokenProb: *cfg.SuffixMinTokenProb,
		global: newSuffixTree(cfg.SuffixMaxTreeDepth)}
}

func (s *Suffix) Name() string { return "suffix" }
func (s *Suffix) Needs() Needs { return Needs{} }
func (s *Suffix) Release()     {}

// NewDrafter starts a sequence's tree; its prompt is known at its first Accept.
func (s *Suffix) NewDrafter() (Drafter, error) {
	return &suffixDrafter{s: s, local: newSuffixTree(s.MaxTreeDepth), prompt: -1}, nil
}

// Propose drafts for each proposal from its sequence's tree and the global one, whichever
// expects more accepted tokens.
func (s *Suffix) Propose(ps []Proposal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range ps {
		d, ok := ps[i].Drafter.(*suffixDrafter)
		if !ok {
			ps[i].Drafts, ps[i].Q = nil, nil
			continue
		}
		ps[i].Drafts, ps[i].Q = s.draft(d.local, ps[i].Ctx, ps[i].K), nil
	}
	return nil
}

// draft is the better of the two trees' speculations for ctx, at most k tokens.
func (s *Suffix) draft(local *suffixTree, ctx []int, k int) []int {
	var best []int
	bestScore := 0.0
	for _, t := range []*suffixTree{local, s.global} {
		n, m := t.match(ctx)
		if n == nil {
			continue
		}
		limit := min(k, int(s.MaxSpecFactor*float64(m)))
		if out, score := t.speculate(n, m, limit, s.MinTokenProb); score > bestScore {
			best, bestScore = out, score
		}
	}
	return best
}

// remember adds a finished sequence's output to the global tree, forgetting the oldest
// outputs past MaxCachedRequests or the node bound.
func (s *Suffix) remember(out []int) {
	if s.MaxCachedRequests == 0 || len(out) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.global.add(out, 1)
	s.cached = append(s.cached, out)
	for len(s.cached) > s.MaxCachedRequests || (s.global.nodes > suffixMaxNodes && len(s.cached) > 1) {
		s.global.add(s.cached[0], -1)
		s.cached[0] = nil
		s.cached = s.cached[1:]
	}
}

// Cached says how many earlier outputs the global tree holds, and their tokens.
func (s *Suffix) Cached() (outputs, tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, out := range s.cached {
		tokens += len(out)
	}
	return len(s.cached), tokens
}

// suffixDrafter is one sequence's tree of its prompt and output.
type suffixDrafter struct {
	s      *Suffix
	local  *suffixTree
	seen   []int // the tokens in local
	prompt int   // the prompt's length (-1 before the first Accept)
}

func (d *suffixDrafter) Keep() batch.Slot { return 0 }

// HostOnly: a preempted sequence keeps its drafter, so its output reaches the global tree
// whole, once, when it ends.
func (d *suffixDrafter) HostOnly() {}

// Accept adds the sequence's new tokens to its tree (the first call: the prompt and the
// first token; a context only grows, also across a preemption).
func (d *suffixDrafter) Accept(ctx []int) error {
	if d.prompt < 0 {
		d.prompt = len(ctx) - 1
	}
	for len(d.seen) < len(ctx) {
		d.seen = append(d.seen, ctx[len(d.seen)])
		d.local.extend(d.seen)
	}
	return nil
}

// Release gives the sequence's output to the global tree (releasing twice is harmless).
func (d *suffixDrafter) Release() {
	if d.local == nil {
		return
	}
	if d.prompt >= 0 && d.prompt < len(d.seen) {
		d.s.remember(append([]int(nil), d.seen[d.prompt:]...))
	}
	d.local, d.seen = nil, nil
}
