package grammar

import (
	"bytes"
	"slices"
)

// Vocab is a model's vocabulary as the grammar sees it: each token's bytes (what the
// detokenizer appends to the text; none for special tokens, which a grammar never allows),
// in a trie, so that a mask walks shared prefixes once.
type Vocab struct {
	size  int      // tokens a mask covers (the model's vocabulary)
	words int      // mask words: ceil(size / 32)
	toks  [][]byte // id -> bytes

	// The trie, its nodes in preorder (node 0 the root, the empty prefix): each node's
	// byte, first child and next sibling (-1: none), and the tokens ending there
	// (order[lo[n]:end[n]]) and in its subtree (order[lo[n]:sub[n]]).
	b            []byte
	child, next  []int32
	lo, end, sub []int32
	order        []int32
}

// NewVocab makes the vocabulary of a model of size tokens; tokenBytes gives each token's
// bytes (nil or empty: a token no grammar allows).
func NewVocab(size int, tokenBytes func(id int) []byte) *Vocab {
	v := &Vocab{size: size, words: (size + 31) / 32, toks: make([][]byte, size)}
	var ids []int32
	for id := range size {
		if b := tokenBytes(id); len(b) > 0 {
			v.toks[id] = b
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(v.toks[a], v.toks[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v.node(0)
	path := []int32{0} // path[d]: the node of the current token's first d bytes
	last := make([]int32, 1)
	var prev []byte
	for _, id := range ids {
		t := v.toks[id]
		l := 0
		for l < len(prev) && l < len(t) && prev[l] == t[l] {
			l++
		}
		for len(path) > l+1 { // leave the nodes past the common prefix
			n := path[len(path)-1]
			v.sub[n] = int32(len(v.order))
			path = path[:len(path)-1]
		}
		for d := l; d < len(t); d++ {
			parent := path[len(path)-1]
			n := v.node(t[d])
			last = append(last, -1)
			if v.child[parent] < 0 {
				v.child[parent] = n
			} else {
				v.next[last[parent]] = n
			}
			last[parent] = n
			path = append(path, n)
		}
		n := path[len(path)-1]
		v.order = append(v.order, id)
		v.end[n] = int32(len(v.order))
		prev = t
	}
	for _, n := range path {
		v.sub[n] = int32(len(v.order))
	}
	return v
}

func (v *Vocab) node(b byte) int32 {
	v.b = append(v.b, b)
	v.child = append(v.child, -1)
	v.next = append(v.next, -1)
	v.lo = append(v.lo, int32(len(v.order)))
	v.end = append(v.end, int32(len(v.order)))
	v.sub = append(v.sub, int32(len(v.order)))
	return int32(len(v.b) - 1)
}

// Size is the number of tokens a mask covers; Words the number of 32-bit words of a mask.
func (v *Vocab) Size() int  { return v.size }
func (v *Vocab) Words() int { return v.words }

// Bytes is token id's bytes (nil: no grammar allows it).
func (v *Vocab) Bytes(id int) []byte {
	if id < 0 || id >= v.size {
		return nil
	}
	return v.toks[id]
}

func setBit(m []uint32, t int32)      { m[t>>5] |= 1 << (t & 31) }
func hasBit(m []uint32, t int32) bool { return m[t>>5]&(1<<(t&31)) != 0 }

// Allowed reports whether mask allows token t.
func Allowed(mask []uint32, t int) bool { return t >= 0 && t>>5 < len(mask) && hasBit(mask, int32(t)) }
