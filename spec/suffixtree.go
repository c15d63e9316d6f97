package spec

// suffixTree counts the substrings of up to depth tokens of the sequences added to it: the
// path from the root through tokens t1..tn ends at a node whose count is how many times
// t1..tn occurs in them. It is a suffix trie cut at a fixed depth (Arctic Inference's
// suffix tree, without path compression): adding a sequence of n tokens touches at most
// n x depth nodes, and removing it again (the global tree's eviction) takes back exactly
// what it added.
type suffixTree struct {
	root  suffixNode
	depth int
	nodes int // nodes below the root
}

// suffixNode is one substring: its count and its one-token extensions, in a list while they
// are few (most nodes have one or two) and indexed by a map past manyKids (the root and the
// shallow nodes have many).
type suffixNode struct {
	count int32
	kids  []suffixEdge
	index map[int32]*suffixNode // with more than manyKids kids
}

const manyKids = 8

type suffixEdge struct {
	tok  int32
	node *suffixNode
}

func newSuffixTree(depth int) *suffixTree { return &suffixTree{depth: depth} }

// child is n's extension by tok, or nil.
func (n *suffixNode) child(tok int) *suffixNode {
	if n.index != nil {
		return n.index[int32(tok)]
	}
	for _, e := range n.kids {
		if int(e.tok) == tok {
			return e.node
		}
	}
	return nil
}

// newChild adds an extension of n by tok (which it lacks).
func (t *suffixTree) newChild(n *suffixNode, tok int) *suffixNode {
	c := &suffixNode{}
	n.kids = append(n.kids, suffixEdge{tok: int32(tok), node: c})
	if n.index != nil {
		n.index[int32(tok)] = c
	} else if len(n.kids) > manyKids {
		n.index = make(map[int32]*suffixNode, 2*len(n.kids))
		for _, e := range n.kids {
			n.index[e.tok] = e.node
		}
	}
	t.nodes++
	return c
}

// add counts every substring of seq of up to depth tokens once more (delta 1) or once less
// (delta -1, for a sequence added before; nodes left with a count of 0 are removed).
func (t *suffixTree) add(seq []int, delta int32) {
	for i := range seq {
		t.addPath(seq[i:min(len(seq), i+t.depth)], delta)
	}
}

// addPath adds delta to the count of each prefix of path.
func (t *suffixTree) addPath(path []int, delta int32) {
	n := &t.root
	n.count += delta
	for _, tok := range path {
		c := n.child(tok)
		if c == nil {
			if delta < 0 {
				return // never added: nothing to take back
			}
			c = t.newChild(n, tok)
		}
		c.count += delta
		if c.count <= 0 {
			t.prune(n, c)
			return
		}
		n = c
	}
}

// prune removes child c of n and everything below it.
func (t *suffixTree) prune(n, c *suffixNode) {
	for i, e := range n.kids {
		if e.node == c {
			n.kids = append(n.kids[:i], n.kids[i+1:]...)
			delete(n.index, e.tok)
			break
		}
	}
	var count func(*suffixNode) int
	count = func(x *suffixNode) int {
		k := 1
		for _, e := range x.kids {
			k += count(e.node)
		}
		return k
	}
	t.nodes -= count(c)
}

// extend adds the substrings that end with the last token of seq (seq without it was added
// before): the incremental form of add for a sequence that grows by one token.
func (t *suffixTree) extend(seq []int) {
	n := len(seq)
	for i := max(0, n-t.depth); i < n; i++ {
		// seq[i:n-1] is in the tree; count seq[i:n] once more along its last edge only.
		t.bump(seq[i:n])
	}
	t.root.count++
}

// bump adds 1 to the count of path, whose proper prefixes are in the tree already.
func (t *suffixTree) bump(path []int) {
	n := &t.root
	for _, tok := range path[:len(path)-1] {
		if n = n.child(tok); n == nil {
			return // cannot happen for a prefix added before; nothing to count on
		}
	}
	last := path[len(path)-1]
	c := n.child(last)
	if c == nil {
		c = t.newChild(n, last)
	}
	c.count++
}

// match finds the longest suffix of pattern (at most depth-1 tokens, so that one more token
// can follow it in the tree) that is a path of the tree with a continuation, and returns its
// node and length (nil and 0 when there is none). (A sequence's own tree holds its current
// suffix with nothing after it, so the longest path alone would often lead nowhere.)
func (t *suffixTree) match(pattern []int) (*suffixNode, int) {
	pattern = pattern[max(0, len(pattern)-(t.depth-1)):]
	for start := range pattern {
		n := &t.root
		for _, tok := range pattern[start:] {
			if n = n.child(tok); n == nil {
				break
			}
		}
		if n != nil && len(n.kids) > 0 {
			return n, len(pattern) - start
		}
	}
	return nil, 0
}

// speculate follows the likeliest continuation from n, a node at depth m: at each step the
// child with the largest count, its probability estimated as child count / node count and
// multiplied along the path, while that stays at least minProb, for at most k tokens (and
// not past the tree's depth). It returns the tokens and the sum of their path probabilities
// (the drafts expected to be accepted).
func (t *suffixTree) speculate(n *suffixNode, m, k int, minProb float64) ([]int, float64) {
	var out []int
	p, score := 1.0, 0.0
	for len(out) < k && m+len(out) < t.depth {
		var best *suffixEdge
		for i := range n.kids {
			if best == nil || n.kids[i].node.count > best.node.count {
				best = &n.kids[i]
			}
		}
		if best == nil || n.count <= 0 {
			break
		}
		q := p * float64(best.node.count) / float64(n.count)
		if q < minProb {
			break
		}
		p, score = q, score+q
		out = append(out, int(best.tok))
		n = best.node
	}
	return out, score
}
