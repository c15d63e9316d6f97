package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// counts lists every path of t with its count, as "tok tok ...=count".
func counts(t *suffixTree) []string {
	var out []string
	var walk func(n *suffixNode, path []string)
	walk = func(n *suffixNode, path []string) {
		for _, e := range n.kids {
			p := append(slices.Clone(path), string(rune('a'+e.tok)))
			out = append(out, strings.Join(p, "")+"="+string(rune('0'+e.node.count)))
			walk(e.node, p)
		}
	}
	walk(&t.root, nil)
	slices.Sort(out)
	return out
}

// The tree counts substrings up to its depth; growing a sequence token by token counts the
// same as adding it whole; taking a sequence back leaves the tree as before it.
func TestSuffixTreeCounts(t *testing.T) {
	seq := []int{0, 1, 2, 0, 1, 3, 0, 1, 2} // abcabdabc
	whole := newSuffixTree(3)
	whole.add(seq, 1)
	got := counts(whole)
	for _, want := range []string{"a=3", "ab=3", "abc=2", "abd=1", "b=3", "bc=2", "ca=1", "cab=1", "d=1", "da=1", "dab=1"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	grown := newSuffixTree(3)
	for i := 1; i <= len(seq); i++ {
		grown.extend(seq[:i])
	}
	if g := counts(grown); !slices.Equal(g, got) || grown.nodes != whole.nodes || grown.root.count != whole.root.count {
		t.Errorf("grown %v (%d nodes), whole %v (%d nodes)", g, grown.nodes, got, whole.nodes)
	}
	other := []int{3, 3, 0, 1}
	whole.add(other, 1)
	whole.add(other, -1)
	if g := counts(whole); !slices.Equal(g, got) {
		t.Errorf("after adding and taking back %v: %v, want %v", other, g, got)
	}
	whole.add(seq, -1)
	if whole.nodes != 0 || whole.root.count != 0 || len(whole.root.kids) != 0 {
		t.Errorf("empty again: %d nodes, root count %d", whole.nodes, whole.root.count)
	}
	// Many children: the root indexes them with a map, and taking one back removes it there.
	wide := newSuffixTree(2)
	for tok := range 40 {
		wide.add([]int{tok, 100}, 1)
	}
	if wide.root.index == nil || wide.root.child(33) == nil || wide.root.child(33).child(100) == nil {
		t.Fatal("the wide root does not index its children")
	}
	wide.add([]int{33, 100}, -1)
	if wide.root.child(33) != nil || len(wide.root.kids) != 40 { // 39 heads and 100
		t.Errorf("after taking 33 back: child %v, %d kids", wide.root.child(33), len(wide.root.kids))
	}
}

// Speculation follows the likeliest continuation of the longest match while its probability
// holds, at most factor x the match's length.
func TestSuffixSpeculate(t *testing.T) {
	cfg := Config{Mode: "suffix", NumSpeculativeTokens: 8}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := NewSuffix(cfg)
	tree := newSuffixTree(24)
	// "the cat sat" three times, "the cat ran" once.
	for _, seq := range [][]int{{1, 2, 3, 9}, {1, 2, 3, 9}, {1, 2, 3, 9}, {1, 2, 4, 8}} {
		tree.add(seq, 1)
	}
	if got := s.draft(tree, []int{7, 7, 1, 2}, 8); !slices.Equal(got, []int{3, 9}) {
		t.Errorf("after 1 2: %v, want 3 9", got)
	}
	if got := s.draft(tree, []int{7, 7, 1}, 8); !slices.Equal(got, []int{2}) {
		t.Errorf("after 1 (a match of 1, factor 1): %v, want one token", got)
	}
	if got := s.draft(tree, []int{5, 6}, 8); got != nil {
		t.Errorf("no match: %v", got)
	}
	s.MinTokenProb = 0.8
	if got := s.draft(tree, []int{7, 1, 2}, 8); got != nil {
		t.Errorf("3 follows 1 2 with probability 3/4 < 0.8: %v", got)
	}
}

// A sequence's drafter drafts from its own prompt, and, once an earlier sequence is released,
// from what that one generated; past MaxCachedRequests the oldest is forgotten.
func TestSuffixGlobalTree(t *testing.T) {
	cfg := Config{Mode: "suffix", NumSpeculativeTokens: 8}
	one := 1
	cfg.SuffixMaxCachedRequests = &one
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := NewSuffix(cfg)
	run := func(prompt, out []int) {
		d, _ := s.NewDrafter()
		ctx := append(slices.Clone(prompt), out[0])
		d.Accept(ctx)
		for _, tok := range out[1:] {
			ctx = append(ctx, tok)
			d.Accept(ctx)
		}
		d.Release()
		d.Release() // harmless
	}
	propose := func(ctx []int) []int {
		d, _ := s.NewDrafter()
		d.Accept(ctx)
		defer d.Release()
		ps := []Proposal{{Drafter: d, Ctx: ctx, K: 8}}
		s.Propose(ps)
		return ps[0].Drafts
	}
	tool := []int{40, 41, 42, 43, 44, 45, 46, 47, 48, 49}
	if got := propose([]int{1, 2, 3, 40, 41, 42, 43}); got != nil {
		t.Errorf("nothing seen yet: %v", got)
	}
	run([]int{1, 2, 3}, tool)
	if got := propose([]int{7, 8, 40, 41, 42, 43}); !slices.Equal(got, tool[4:8]) {
		t.Errorf("after a request wrote %v: %v, want %v (4 matched, factor 1)", tool, got, tool[4:8])
	}
	run([]int{1}, []int{60, 61, 62, 63})
	if got := propose([]int{7, 8, 40, 41, 42, 43}); got != nil {
		t.Errorf("the first output is forgotten (max 1 cached): %v", got)
	}
	if got := propose([]int{5, 40, 41, 42, 5, 40, 41}); !slices.Equal(got, []int{42, 5, 40}) {
		t.Errorf("from the sequence's own prompt: %v", got)
	}
}

// The suffix options: vLLM's names, defaults, ranges; not for other methods.
func TestSuffixConfig(t *testing.T) {
	var c Config
	if err := json.Unmarshal([]byte(`{"method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 16,
		"suffix_decoding_max_cached_requests": 0, "suffix_decoding_max_spec_factor": 2, "suffix_decoding_min_token_prob": 0}`), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.SuffixMaxTreeDepth != 16 || *c.SuffixMaxCachedRequests != 0 || c.SuffixMaxSpecFactor != 2 || *c.SuffixMinTokenProb != 0 {
		t.Fatalf("%+v %v", c, err)
	}
	d := Config{Mode: "suffix", NumSpeculativeTokens: 4}
	if err := d.Validate(); err != nil || d.SuffixMaxTreeDepth != 24 || *d.SuffixMaxCachedRequests != 10000 || d.SuffixMaxSpecFactor != 1 || *d.SuffixMinTokenProb != 0.1 {
		t.Fatalf("defaults: %+v %v", d, err)
	}
	for _, bad := range []string{
		`{"method": "suffix", "num_speculative_tokens": 4, "suffix_decoding_max_tree_depth": 1}`,
		`{"method": "suffix", "num_speculative_tokens": 4, "suffix_decoding_max_cached_requests": -1}`,
		`{"method": "suffix", "num_speculative_tokens": 4, "suffix_decoding_max_spec_factor": -1}`,
		`{"method": "suffix", "num_speculative_tokens": 4, "suffix_decoding_min_token_prob": 1.5}`,
		`{"method": "suffix", "num_speculative_tokens": 4, "model": "x"}`,
		`{"method": "ngram", "num_speculative_tokens": 4, "suffix_decoding_max_tree_depth": 8}`,
	} {
		var c Config
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			if err = c.Validate(); err == nil {
				t.Errorf("%s: accepted", bad)
			}
		}
	}
}
