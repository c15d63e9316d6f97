package tokenizer

import (
	"container/heap"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// bpeMerge is one entry of the merges list: its rank (lower merges first) and
// the id of the merged token.
type bpeMerge struct {
	rank   int32
	result int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// buildMerges checks every merge against the vocabulary (both halves and
// their concatenation must be tokens) and indexes it by its pair of ids. A
// repeated merge keeps its first (best) rank.
func (t *Tokenizer) buildMerges(merges [][2]string) error {
	t.merges = make(map[uint64]bpeMerge, len(merges))
	for rank, m := range merges {
		a, okA := t.ids[m[0]]
		b, okB := t.ids[m[1]]
		r, okR := t.ids[m[0]+m[1]]
		if !okA || !okB || !okR {
			return fmt.Errorf("%w: merge %d %q %q uses a token missing from the vocabulary", ErrBad, rank, m[0], m[1])
		}
		k := pairKey(int32(a), int32(b))
		if _, dup := t.merges[k]; !dup {
			t.merges[k] = bpeMerge{rank: int32(rank), result: int32(r)}
		}
	}
	return nil
}

// SetMergeRank gives the merge of tokens a and b rank (lower merges first), if the tokenizer
// has that merge. A SentencePiece model ranks merges by score, and equal scores are one rank
// (the leftmost pair wins among them, as in llama.cpp): a GGUF file's builder sets them so.
func (t *Tokenizer) SetMergeRank(a, b string, rank int32) {
	ia, okA := t.ids[a]
	ib, okB := t.ids[b]
	r, okR := t.ids[a+b]
	if !okA || !okB || !okR {
		return
	}
	k := pairKey(int32(ia), int32(ib))
	if e, ok := t.merges[k]; ok && e.result == int32(r) {
		e.rank = rank
		t.merges[k] = e
	}
}

// bpeCandidate is a mergeable adjacent pair (left, right) of symbols, with the
// ids they had when it was queued (to detect stale entries).
type bpeCandidate struct {
	rank, result    int32
	left, right     int32
	leftID, rightID int32
}

type bpeQueue []bpeCandidate

func (q bpeQueue) Len() int { return len(q) }
func (q bpeQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].left < q[j].left
}
func (q bpeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bpeQueue) Push(x any)   { *q = append(*q, x.(bpeCandidate)) }
func (q *bpeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// bpe merges the symbols of one word: repeatedly the adjacent pair with the
// lowest merge rank, the leftmost one on a tie — the same result as llama2.c's
// quadratic loop when ranks follow scores, in O(n log n).
func (t *Tokenizer) bpe(ids []int32) []int32 {
	n := len(ids)
	if n < 2 {
		return ids
	}
	next := make([]int32, n)
	prev := make([]int32, n)
	alive := make([]bool, n)
	for i := range n {
		next[i], prev[i], alive[i] = int32(i+1), int32(i-1), true
	}
	next[n-1] = -1
	q := make(bpeQueue, 0, n)
	push := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		if m, ok := t.merges[pairKey(ids[l], ids[r])]; ok {
			heap.Push(&q, bpeCandidate{m.rank, m.result, l, r, ids[l], ids[r]})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(int32(i), int32(i+1))
	}
	for q.Len() > 0 {
		c := heap.Pop(&q).(bpeCandidate)
		if !alive[c.left] || !alive[c.right] || next[c.left] != c.right || ids[c.left] != c.leftID || ids[c.right] != c.rightID {
			continue // stale: one side has merged since
		}
		ids[c.left] = c.result
		alive[c.right] = false
		next[c.left] = next[c.right]
		if nr := next[c.right]; nr >= 0 {
			prev[nr] = c.left
		}
		push(prev[c.left], c.left)
		push(c.left, next[c.left])
	}
	out := ids[:0:0]
	for i := int32(0); i >= 0 && int(i) < n; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}

// Encode turns text into token ids, with BOS first when addBOS is set and the
// tokenizer has one. Added tokens (tokenizer.json "added_tokens", such as
// "<s>" or "<|im_start|>") are matched literally first, longest match at the
// leftmost position; the text between them goes through BPE.
//
// SentencePiece kind, as llama2.c: spaces become "▁", a "▁" is prepended to
// the text when it does not start with an added token and is not empty, each
// character becomes its token or, when missing, its UTF-8 bytes as byte tokens,
// then BPE merges the whole text as one word.
//
// Byte-level kind: each pre-tokenizer piece's bytes become their mapped
// characters, then BPE merges within the piece.
//
// Characters the vocabulary cannot express become the unk token, or are
// dropped when there is none.
func (t *Tokenizer) Encode(text string, addBOS bool) []int {
	var out []int
	if addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	first := true
	for len(text) > 0 {
		pos, tok := t.nextAdded(text)
		if pos > 0 {
			out = t.encodeSegment(out, text[:pos], first)
		}
		if tok == nil {
			break
		}
		out = append(out, tok.id)
		text = text[pos+len(tok.content):]
		first = false
	}
	return out
}

// nextAdded finds the leftmost added token in text (longest at that place).
// It returns len(text) and nil when there is none.
func (t *Tokenizer) nextAdded(text string) (int, *addedToken) {
	if len(t.added) == 0 {
		return len(text), nil
	}
	for i := 0; i < len(text); i++ {
		if !t.addedFirst[text[i]] {
			continue
		}
		for k := range t.added {
			if strings.HasPrefix(text[i:], t.added[k].content) {
				return i, &t.added[k]
			}
		}
	}
	return len(text), nil
}

// encodeSegment appends the BPE tokens of text, which holds no added token.
// first is set for the segment at the start of the whole text.
func (t *Tokenizer) encodeSegment(out []int, text string, first bool) []int {
	if t.nfc {
		text = norm.NFC.String(text) // as Hugging Face normalizes each segment between added tokens
	}
	if t.kind == SentencePieceBPE {
		if first && t.dummyPrefix {
			text = " " + text
		}
		if t.spaceToMeta {
			text = strings.ReplaceAll(text, " ", metaspace)
		}
		for _, piece := range t.split.pieces(text) {
			out = t.appendWord(out, t.spSymbols(piece))
		}
		return out
	}
	if t.prefixSpace && !strings.HasPrefix(text, " ") && first {
		text = " " + text
	}
	for _, piece := range t.split.pieces(text) {
		if t.ignoreMerges {
			if id, ok := t.ids[byteLevelString(piece)]; ok {
				out = append(out, id)
				continue
			}
		}
		syms := make([]int32, 0, len(piece))
		for i := 0; i < len(piece); i++ {
			if id := t.byteRuneIDs[piece[i]]; id >= 0 {
				syms = append(syms, int32(id))
			} else if t.unk >= 0 {
				syms = append(syms, int32(t.unk))
			}
		}
		out = t.appendWord(out, syms)
	}
	return out
}

// spSymbols splits SentencePiece text into initial symbols: a token per
// character, else its bytes as byte tokens, else unk. Invalid UTF-8 bytes are
// treated as unknown one-byte characters.
func (t *Tokenizer) spSymbols(text string) []int32 {
	syms := make([]int32, 0, len(text))
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		ch := text[i : i+size]
		i += size
		if r != utf8.RuneError || size > 1 {
			if id, ok := t.ids[ch]; ok {
				syms = append(syms, int32(id))
				continue
			}
		}
		if t.byteFallback && t.haveBytes(ch) {
			for k := 0; k < len(ch); k++ {
				syms = append(syms, int32(t.byteIDs[ch[k]]))
			}
		} else if t.unk >= 0 {
			syms = append(syms, int32(t.unk))
		}
	}
	return syms
}

func (t *Tokenizer) haveBytes(s string) bool {
	for k := 0; k < len(s); k++ {
		if t.byteIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}

func (t *Tokenizer) appendWord(out []int, syms []int32) []int {
	for _, id := range t.bpe(syms) {
		out = append(out, int(id))
	}
	return out
}
