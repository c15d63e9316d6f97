package kv

import (
	"slices"
	"testing"
)

func seqOf(t *testing.T, p *PagePool, tokens []int) *Sequence {
	t.Helper()
	s := p.NewSequence()
	if err := s.Reserve(len(tokens)); err != nil {
		t.Fatal(err)
	}
	s.Commit(len(tokens))
	s.Register(tokens)
	return s
}

// A sequence registers its full pages; another whose tokens start the same takes the longest
// run of them (whole pages, at most the limit), sharing them; a different token, a different
// earlier page or a limit short of a page stops the match.
func TestPrefixMatch(t *testing.T) {
	p := NewPagePool(16, 4)
	p.EnablePrefixCaching()
	toks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	a := seqOf(t, p, toks)
	for _, c := range []struct {
		tokens []int
		limit  int
		want   int
	}{
		{toks, 10, 8},
		{toks, 7, 4},
		{toks, 3, 0},
		{[]int{1, 2, 3, 4, 5, 6, 7, 9}, 8, 4}, // the second page differs
		{[]int{0, 2, 3, 4, 5, 6, 7, 8}, 8, 0}, // the first page differs: the second's key too
		{append(slices.Clone(toks[:8]), 0, 0, 0, 0), 12, 8}, // a third page nobody registered
	} {
		b := p.NewSequence()
		if n := b.MatchPrefix(c.tokens, c.limit); n != c.want || b.Len() != n || len(b.Pages()) != n/4 {
			t.Errorf("match %v limit %d: %d tokens, %d pages; want %d", c.tokens, c.limit, n, len(b.Pages()), c.want)
		}
		for i := range b.Pages() {
			if b.Pages()[i] != a.Pages()[i] {
				t.Errorf("match %v: page %d is %d, not the registered %d", c.tokens, i, b.Pages()[i], a.Pages()[i])
			}
		}
		b.Release()
	}
	if q, h := p.PrefixStats(); q != 10+7+3+8+8+12 || h != 8+4+0+4+0+8 {
		t.Errorf("stats: %d queries, %d hits", q, h)
	}
	a.Release()
	if p.InUse() != 0 || p.Free() != 16 {
		t.Fatalf("after release: %d in use, %d free", p.InUse(), p.Free())
	}
}

// Cached pages nobody uses are taken last, least recently used first; a match takes a cached
// page off the eviction list; an evicted page is matched no more.
func TestPrefixEviction(t *testing.T) {
	p := NewPagePool(4, 2)
	p.EnablePrefixCaching()
	a := seqOf(t, p, []int{1, 2, 3, 4}) // pages cached: [1 2], [1 2 | 3 4]
	a.Release()
	b := seqOf(t, p, []int{5, 6}) // a free page first: the cache stays
	if p.Free() != 3 || p.InUse() != 1 {
		t.Fatalf("%d free (cached included), %d in use", p.Free(), p.InUse())
	}
	c := p.NewSequence()
	if n := c.MatchPrefix([]int{1, 2, 3, 4, 9}, 4); n != 4 {
		t.Fatalf("matched %d after release", n)
	}
	c.Release() // [1 2] and [3 4] listed again, [1 2] first
	d := p.NewSequence()
	if err := d.Reserve(4); err != nil { // the free page, then the least recently used cached one
		t.Fatal(err)
	}
	e := p.NewSequence()
	if n := e.MatchPrefix([]int{1, 2, 3, 4}, 4); n != 0 {
		t.Fatalf("matched %d tokens of an evicted first page", n)
	}
	if err := e.Reserve(1); err != nil { // the last cached page
		t.Fatal(err)
	}
	if err := e.Reserve(3); err == nil {
		t.Fatal("a fifth page of four")
	}
	b.Release()
	d.Release()
	e.Release()
	if p.InUse() != 0 {
		t.Fatalf("%d pages in use", p.InUse())
	}
}

// Without prefix caching nothing is registered or matched.
func TestNoPrefixCaching(t *testing.T) {
	p := NewPagePool(4, 2)
	a := seqOf(t, p, []int{1, 2, 3, 4})
	if n := p.NewSequence().MatchPrefix([]int{1, 2, 3, 4}, 4); n != 0 || p.Cached(1) || p.Keys([]int{1, 2}) != nil {
		t.Fatalf("matched %d without prefix caching", n)
	}
	a.Release()
	if p.Free() != 4 {
		t.Fatalf("%d free", p.Free())
	}
}
