package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The matcher's state is a set of stacks (a nondeterministic pushdown automaton over bytes):
// each stack a chain of frames, a frame a rule and its automaton's state; the top frame reads
// the next byte, the ones below wait for their callee to return. Frames are interned, so two
// equal stacks are one pointer and a set of stacks is a short list of tops.

type frame struct {
	rule, state int32
	parent      *frame
	id          uint32
	seen        uint32          // the expansion (stamp) that last visited it
	memo        *[256]*stepMemo // what reading each byte from this stack gives, once computed
}

// stepMemo is what reading one byte does to one stack: the stacks it becomes, and whether it
// popped into the sentinel.
type stepMemo struct {
	out     []*frame
	escaped bool
}

type frameKey struct {
	rule, state int32
	parent      *frame
}

// stacks interns frames and steps sets of stacks over bytes.
type stacks struct {
	g      *Grammar
	intern map[frameKey]*frame
	stamp  uint32
	// sentinel stands for the frames below a mask's top frame (localMask): popping into it is
	// an escape, whose outcome depends on the stack below.
	sentinel *frame
	escaped  bool
}

func newStacks(g *Grammar) *stacks {
	return &stacks{g: g, intern: map[frameKey]*frame{}, sentinel: &frame{rule: -1}}
}

// maxStacks bounds a state's stacks: an ambiguous grammar could otherwise multiply them.
const maxStacks = 4096

func (s *stacks) frame(rule, state int32, parent *frame) *frame {
	k := frameKey{rule, state, parent}
	if f := s.intern[k]; f != nil {
		return f
	}
	f := &frame{rule: rule, state: state, parent: parent, id: uint32(len(s.intern) + 1)}
	s.intern[k] = f
	return f
}

// step appends to out the stacks that read byte b from the stacks in set (sorted by id, no
// duplicates) and returns it; s.escaped tells whether some stack popped into the sentinel.
func (s *stacks) step(set []*frame, b byte, out []*frame) []*frame {
	esc := false
	out = out[:0]
	for _, f := range set {
		if f == s.sentinel {
			esc = true
			continue
		}
		if f.memo == nil {
			f.memo = new([256]*stepMemo)
		}
		m := f.memo[b]
		if m == nil {
			s.stamp++
			s.escaped, m = false, &stepMemo{}
			m.out = s.expand(f, b, nil)
			m.escaped = s.escaped
			f.memo[b] = m
		}
		out = append(out, m.out...)
		esc = esc || m.escaped
	}
	s.escaped = esc
	if len(out) > 1 {
		slices.SortFunc(out, func(a, b *frame) int { return int(a.id) - int(b.id) })
		out = slices.Compact(out)
	}
	return out
}

// expand appends what reading b does to the stack topped by f: its own edge on b, each rule
// it may call that can start with b (or match nothing), and, when it may return, its caller.
func (s *stacks) expand(f *frame, b byte, out []*frame) []*frame {
	if f == s.sentinel {
		s.escaped = true
		return out
	}
	if f.seen == s.stamp {
		return out
	}
	f.seen = s.stamp
	g := s.g
	d := g.rules[f.rule]
	if t := d.next(f.state, b); t >= 0 {
		out = append(out, s.frame(f.rule, t, f.parent))
	}
	for _, c := range d.calls[f.state] {
		if g.nullable[c.rule] || g.firstHas(c.rule, b) {
			out = s.expand(s.frame(c.rule, 0, s.frame(f.rule, c.ret, f.parent)), b, out)
		}
	}
	if d.accept[f.state] && f.parent != nil {
		out = s.expand(f.parent, b, out)
	}
	return out
}

// canEnd reports whether the stack topped by f may return all the way down without another
// byte (the text so far is a whole match).
func (s *stacks) canEnd(f *frame) bool {
	for ; f != nil; f = f.parent {
		if f == s.sentinel || !s.g.endable[f.rule][f.state] {
			return false
		}
	}
	return true
}

// accepts reports whether the stack topped by f reads all of text.
func (s *stacks) accepts(f *frame, text []byte) bool {
	set := []*frame{f}
	var buf [2][]*frame
	for i, b := range text {
		set = s.step(set, b, buf[i&1])
		buf[i&1] = set
		if len(set) == 0 {
			return false
		}
	}
	return true
}

// localMask is what a mask owes to one top frame alone, whatever lies below it: the tokens
// it reads without returning (acc), and those that return from it somewhere (unc), which
// the stack below decides.
type localMask struct {
	acc  []uint32
	nacc int // tokens in acc
	unc  []int32
}

// localMask returns the context-free mask of top frame (rule, state), computing it once per
// grammar by a walk of the vocabulary's trie.
func (g *Grammar) localMask(rule, state int32) *localMask {
	key := uint64(rule)<<32 | uint64(state)
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.local[key]; m != nil {
		return m
	}
	s := newStacks(g)
	v := g.vocab
	m := &localMask{acc: make([]uint32, v.words)}
	bufs := make([][]*frame, 0, 64)
	var walk func(n int32, set []*frame, esc bool, depth int)
	walk = func(n int32, set []*frame, esc bool, depth int) {
		for _, t := range v.order[v.lo[n]:v.end[n]] {
			if len(set) > 0 {
				setBit(m.acc, t)
				m.nacc++
			} else if esc {
				m.unc = append(m.unc, t)
			}
		}
		for len(bufs) <= depth {
			bufs = append(bufs, nil)
		}
		for c := v.child[n]; c >= 0; c = v.next[c] {
			next := s.step(set, v.b[c], bufs[depth])
			bufs[depth] = next
			e := esc || s.escaped
			switch {
			case len(next) > 0:
				walk(c, next, e, depth+1)
			case e:
				m.unc = append(m.unc, v.order[v.lo[c]:v.sub[c]]...)
			}
		}
	}
	walk(0, []*frame{s.frame(rule, state, s.sentinel)}, false, 0)
	g.local[key] = m
	return m
}

// Matcher follows one output through a grammar: the tokens accepted so far, and the mask of
// the tokens allowed next. Not safe for concurrent use; each request has its own.
type Matcher struct {
	g     *Grammar
	s     *stacks
	cur   []*frame
	masks map[string]*entry // the masks of the states seen, by their stacks
}

type entry struct {
	mask []uint32
	end  bool
}

// Bytes is about what the grammar holds in memory: its automata and the masks its matchers
// have computed so far (they grow as outputs visit new states).
func (g *Grammar) Bytes() int {
	n := 0
	for _, d := range g.rules {
		n += 4*len(d.trans) + 16*d.nstates
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.local {
		n += 4*len(m.acc) + 4*len(m.unc) + 64
	}
	for k, e := range g.shared {
		n += 4*len(e.mask) + len(k) + 64
	}
	return n
}

// maxMasks bounds a matcher's cache of masks.
const maxMasks = 4096

// NewMatcher starts an output at the grammar's root.
func (g *Grammar) NewMatcher() *Matcher {
	s := newStacks(g)
	return &Matcher{g: g, s: s, cur: []*frame{s.frame(g.root, 0, nil)}, masks: map[string]*entry{}}
}

// Mark is a matcher's position, to return to with Reset (drafts looked ahead, then rolled
// back).
type Mark struct{ cur []*frame }

func (m *Matcher) Mark() Mark   { return Mark{m.cur} }
func (m *Matcher) Reset(k Mark) { m.cur = k.cur }

// Mask returns the tokens allowed next (bit t%32 of word t/32; read only, the matcher's to
// keep) and whether the output may end here (a stop token is then allowed: the caller's
// to add). A mask with no token and no end means no token of the vocabulary continues the
// grammar.
func (m *Matcher) Mask() ([]uint32, bool) {
	key := make([]byte, 4*len(m.cur))
	for i, f := range m.cur {
		binary.LittleEndian.PutUint32(key[4*i:], f.id)
	}
	if e := m.masks[string(key)]; e != nil {
		return e.mask, e.end
	}
	shared := m.sharedKey()
	if e := m.g.sharedMask(shared); e != nil {
		m.remember(string(key), e)
		return e.mask, e.end
	}
	v := m.g.vocab
	e := &entry{mask: make([]uint32, v.words)}
	for _, f := range m.cur {
		e.end = e.end || m.s.canEnd(f)
		loc := m.g.localMask(f.rule, f.state)
		for i, w := range loc.acc {
			e.mask[i] |= w
		}
		switch {
		case f.parent == nil: // returning from the root ends the output: nothing follows
		case len(loc.unc) > uncWalk && loc.nacc < len(loc.unc):
			m.walk(f, e.mask)
		default:
			for _, t := range loc.unc {
				if !hasBit(e.mask, t) && m.s.accepts(f, v.toks[t]) {
					setBit(e.mask, t)
				}
			}
		}
	}
	m.remember(string(key), e)
	m.g.shareMask(shared, e)
	return e.mask, e.end
}

// uncWalk is how many tokens a state may leave to its stack below before the mask checks
// them by one walk of the trie with the whole stack rather than token by token, when they
// also outnumber the tokens it takes itself (after a number, nearly every token returns from
// it and the caller takes few; in a string, most tokens stay in it and the walk would visit
// them all).
const uncWalk = 512

// walk sets in mask every token the stack topped by f reads whole.
func (m *Matcher) walk(f *frame, mask []uint32) {
	v := m.g.vocab
	var bufs [][]*frame
	var rec func(n int32, set []*frame, depth int)
	rec = func(n int32, set []*frame, depth int) {
		for _, t := range v.order[v.lo[n]:v.end[n]] {
			setBit(mask, t)
		}
		for len(bufs) <= depth {
			bufs = append(bufs, nil)
		}
		for c := v.child[n]; c >= 0; c = v.next[c] {
			next := m.s.step(set, v.b[c], bufs[depth])
			bufs[depth] = next
			if len(next) > 0 {
				rec(c, next, depth+1)
			}
		}
	}
	for c := v.child[0]; c >= 0; c = v.next[c] {
		if next := m.s.step([]*frame{f}, v.b[c], nil); len(next) > 0 {
			rec(c, next, 1)
		}
	}
}

func (m *Matcher) remember(key string, e *entry) {
	if len(m.masks) >= maxMasks {
		clear(m.masks)
	}
	m.masks[key] = e
}

// sharedKey names the current state by its stacks' contents (rules and states, top to
// bottom), which mean the same in every matcher of the grammar.
func (m *Matcher) sharedKey() string {
	var b []byte
	for _, f := range m.cur {
		for ; f != nil; f = f.parent {
			b = binary.LittleEndian.AppendUint32(b, uint32(f.rule))
			b = binary.LittleEndian.AppendUint32(b, uint32(f.state))
		}
		b = append(b, 0xff, 0xff, 0xff, 0xff) // (no rule is numbered so)
	}
	return string(b)
}

// maxShared bounds the masks a grammar keeps for its matchers to share (a mask is
// vocabulary/8 bytes: 16 KB for 128k tokens).
const maxShared = 256

func (g *Grammar) sharedMask(key string) *entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shared[key]
}

func (g *Grammar) shareMask(key string, e *entry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.shared) >= maxShared {
		clear(g.shared)
	}
	g.shared[key] = e
}

// Accept moves past token tok; an error when the grammar does not allow it there (the
// matcher is then as it was).
func (m *Matcher) Accept(tok int) error {
	text := m.g.vocab.Bytes(tok)
	if len(text) == 0 {
		return fmt.Errorf("grammar: token %d has no text the grammar could match", tok)
	}
	set := m.cur
	for i, b := range text {
		next := m.s.step(set, b, nil)
		if len(next) == 0 {
			return fmt.Errorf("grammar: token %d (%q) does not continue the output at byte %d", tok, text, i)
		}
		if len(next) > maxStacks {
			return fmt.Errorf("%w: the grammar is too ambiguous (more than %d parses at once)", ErrUnsupported, maxStacks)
		}
		set = next
	}
	m.cur = set
	return nil
}

// End reports whether the output so far is a whole match.
func (m *Matcher) End() bool {
	for _, f := range m.cur {
		if m.s.canEnd(f) {
			return true
		}
	}
	return false
}
