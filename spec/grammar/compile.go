package grammar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrUnsupported is wrapped by the errors of a schema, expression or grammar that uses a
// construct the engine does not compile; the message names it.
var ErrUnsupported = errors.New("grammar: unsupported")

// ErrInvalid is wrapped by the errors of malformed input (a schema that is not JSON, a
// regular expression or GBNF grammar that does not parse, an undefined rule).
var ErrInvalid = errors.New("grammar: invalid")

// Limits on what one grammar compiles to, so that a request cannot make the server build
// an automaton of unbounded size.
const (
	maxNFAStates = 400000
	maxDFAStates = 60000
	maxRules     = 5000
	// maxMinimized is the most states a rule's automaton is minimised at: Moore's refinement
	// takes as many rounds as its longest chain of distinct states, quadratic in a counted
	// repetition's chain (lift.go), which is minimal already.
	maxMinimized = 2048
)

// dfa is one rule compiled: a deterministic automaton over bytes whose states may also call
// rules (push the callee, continue at ret once it returns). Bytes map to classes (bytes no
// state tells apart share one), trans is [states x classes] (-1: no edge).
type dfa struct {
	class   [256]uint8
	nclass  int
	trans   []int32
	accept  []bool   // the rule may end (return) in this state
	calls   [][]call // per state
	nstates int
}

type call struct{ rule, ret int32 }

func (d *dfa) next(s int32, b byte) int32 { return d.trans[int(s)*d.nclass+int(d.class[b])] }

// nfa is one rule's Thompson automaton while it is compiled.
type nfa struct {
	eps    [][]int32
	edges  [][]nedge
	budget *budget
}

type nedge struct {
	lo, hi byte
	call   int32 // -1: a byte edge
	to     int32
}

func (a *nfa) state() (int32, error) {
	if len(a.eps) >= maxNFAStates {
		return 0, fmt.Errorf("%w: the grammar is too large (more than %d automaton states in one rule)", ErrUnsupported, maxNFAStates)
	}
	if err := a.budget.spend(1); err != nil {
		return 0, err
	}
	a.eps = append(a.eps, nil)
	a.edges = append(a.edges, nil)
	return int32(len(a.eps) - 1), nil
}

// build adds n's automaton from state from and returns its end state.
func (a *nfa) build(n *node, from int32) (int32, error) {
	switch n.k {
	case kEmpty:
		return from, nil
	case kBytes:
		cur := from
		for _, b := range n.lit {
			to, err := a.state()
			if err != nil {
				return 0, err
			}
			a.edges[cur] = append(a.edges[cur], nedge{lo: b, hi: b, call: -1, to: to})
			cur = to
		}
		return cur, nil
	case kRange:
		to, err := a.state()
		if err != nil {
			return 0, err
		}
		a.edges[from] = append(a.edges[from], nedge{lo: n.lo, hi: n.hi, call: -1, to: to})
		return to, nil
	case kRef:
		to, err := a.state()
		if err != nil {
			return 0, err
		}
		a.edges[from] = append(a.edges[from], nedge{call: int32(n.rule), to: to})
		return to, nil
	case kSeq:
		cur := from
		for _, k := range n.kids {
			var err error
			if cur, err = a.build(k, cur); err != nil {
				return 0, err
			}
		}
		return cur, nil
	case kAlt:
		end, err := a.state()
		if err != nil {
			return 0, err
		}
		for _, k := range n.kids {
			start, err := a.state()
			if err != nil {
				return 0, err
			}
			a.eps[from] = append(a.eps[from], start)
			e, err := a.build(k, start)
			if err != nil {
				return 0, err
			}
			a.eps[e] = append(a.eps[e], end)
		}
		return end, nil
	case kRepeat:
		limit := maxRepeat
		if n.kids[0].k == kRef { // a call a count (lift.go)
			limit = maxLifted
		}
		if n.max >= 0 && n.max < n.min || n.min > limit || n.max > limit {
			return 0, fmt.Errorf("%w: a repetition {%d,%d} (at most %d)", ErrUnsupported, n.min, n.max, limit)
		}
		cur := from
		for range n.min {
			var err error
			if cur, err = a.build(n.kids[0], cur); err != nil {
				return 0, err
			}
		}
		if n.max < 0 { // a loop: cur -> body -> cur
			start, err := a.state()
			if err != nil {
				return 0, err
			}
			a.eps[cur] = append(a.eps[cur], start)
			e, err := a.build(n.kids[0], start)
			if err != nil {
				return 0, err
			}
			a.eps[e] = append(a.eps[e], cur)
			return cur, nil
		}
		end, err := a.state()
		if err != nil {
			return 0, err
		}
		for range n.max - n.min {
			a.eps[cur] = append(a.eps[cur], end)
			if cur, err = a.build(n.kids[0], cur); err != nil {
				return 0, err
			}
		}
		a.eps[cur] = append(a.eps[cur], end)
		return end, nil
	}
	return 0, fmt.Errorf("grammar: node kind %d", n.k)
}

// closure is the set of states reachable from set by epsilon edges, sorted.
func (a *nfa) closure(set []int32, seen []bool) []int32 {
	out := append([]int32(nil), set...)
	for _, s := range set {
		seen[s] = true
	}
	for i := 0; i < len(out); i++ {
		for _, t := range a.eps[out[i]] {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	for _, s := range out {
		seen[s] = false
	}
	slices.Sort(out)
	return out
}

func setKey(set []int32) string {
	b := make([]byte, 4*len(set))
	for i, s := range set {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(s))
	}
	return string(b)
}

// compileRule turns one rule's expression into its dfa (subset construction).
func compileRule(body *node, b *budget) (*dfa, error) {
	a := &nfa{budget: b}
	start, _ := a.state()
	final, err := a.build(body, start)
	if err != nil {
		return nil, err
	}
	seen := make([]bool, len(a.eps))
	var sets [][]int32
	index := map[string]int32{}
	intern := func(set []int32) (int32, error) {
		c := a.closure(set, seen)
		k := setKey(c)
		if i, ok := index[k]; ok {
			return i, nil
		}
		if len(sets) >= maxDFAStates {
			return 0, fmt.Errorf("%w: the grammar is too large (more than %d automaton states in one rule)", ErrUnsupported, maxDFAStates)
		}
		index[k] = int32(len(sets))
		sets = append(sets, c)
		return int32(len(sets) - 1), nil
	}
	if _, err := intern([]int32{start}); err != nil {
		return nil, err
	}
	var rows []*[256]int32 // pointers: a counted repetition's many rows grow without copies
	var accept []bool
	var calls [][]call
	for i := 0; i < len(sets); i++ {
		set := sets[i]
		if err := b.spend(256 + len(set)); err != nil { // a row of 256 bytes, and the set's edges
			return nil, err
		}
		var targets [256][]int32
		callTo := map[int32][]int32{}
		var callOrder []int32
		for _, s := range set {
			for _, e := range a.edges[s] {
				if e.call >= 0 {
					if _, ok := callTo[e.call]; !ok {
						callOrder = append(callOrder, e.call)
					}
					callTo[e.call] = append(callTo[e.call], e.to)
					continue
				}
				for b := int(e.lo); b <= int(e.hi); b++ {
					targets[b] = append(targets[b], e.to)
				}
			}
		}
		row := new([256]int32)
		byKey := map[string]int32{}
		for b := range 256 {
			row[b] = -1
			if len(targets[b]) == 0 {
				continue
			}
			k := setKey(targets[b])
			t, ok := byKey[k]
			if !ok {
				if t, err = intern(targets[b]); err != nil {
					return nil, err
				}
				byKey[k] = t
			}
			row[b] = t
		}
		var cs []call
		for _, r := range callOrder {
			t, err := intern(callTo[r])
			if err != nil {
				return nil, err
			}
			cs = append(cs, call{rule: r, ret: t})
		}
		rows = append(rows, row)
		accept = append(accept, slices.Contains(set, final))
		calls = append(calls, cs)
	}
	d := &dfa{accept: accept, calls: calls, nstates: len(rows)}
	// Byte classes: bytes whose columns are equal (over the rows that tell bytes apart: a
	// row of one target for every byte splits no class).
	var splitting []*[256]int32
	for _, row := range rows {
		if slices.ContainsFunc(row[1:], func(t int32) bool { return t != row[0] }) {
			splitting = append(splitting, row)
		}
	}
	cols := map[string]uint8{}
	col := make([]int32, len(splitting))
	for b := range 256 {
		for s, row := range splitting {
			col[s] = row[b]
		}
		k := setKey(col)
		c, ok := cols[k]
		if !ok {
			c = uint8(len(cols))
			cols[k] = c
		}
		d.class[b] = c
	}
	d.nclass = len(cols)
	d.trans = make([]int32, len(rows)*d.nclass)
	for s := range rows {
		for b := range 256 {
			d.trans[s*d.nclass+int(d.class[b])] = rows[s][b]
		}
	}
	if len(rows) <= maxMinimized {
		d.minimize()
	}
	return d, nil
}

// minimize merges the states of d that behave alike (Moore's partition refinement): the
// same acceptance, the same calls, and edges into the same classes of states. Subset
// construction leaves such twins (the state after a string's escape and after a plain
// character), and each would cost its own mask computation. The start stays state 0.
func (d *dfa) minimize() {
	n := d.nstates
	block := make([]int32, n)
	sig := func(s int, withTrans bool) string {
		b := make([]byte, 0, 8+4*d.nclass)
		b = binary.LittleEndian.AppendUint32(b, uint32(block[s]))
		if d.accept[s] {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		for _, c := range d.calls[s] {
			b = binary.LittleEndian.AppendUint32(b, uint32(c.rule))
			if withTrans {
				b = binary.LittleEndian.AppendUint32(b, uint32(block[c.ret]))
			}
		}
		if withTrans {
			for c := range d.nclass {
				t := d.trans[s*d.nclass+c]
				if t >= 0 {
					t = block[t]
				}
				b = binary.LittleEndian.AppendUint32(b, uint32(t))
			}
		}
		return string(b)
	}
	count := 0
	refine := func(withTrans bool) {
		ids := map[string]int32{}
		next := make([]int32, n)
		for s := range n {
			k := sig(s, withTrans)
			id, ok := ids[k]
			if !ok {
				id = int32(len(ids))
				ids[k] = id
			}
			next[s] = id
		}
		copy(block, next)
		count = len(ids)
	}
	refine(false)
	for {
		before := count
		refine(true)
		if count == before {
			break
		}
	}
	if count == n {
		return
	}
	// Renumber the blocks in order of first appearance, so that the start's block is 0.
	order := make([]int32, count)
	for i := range order {
		order[i] = -1
	}
	rep := make([]int, 0, count) // a state of each new state
	for s := range n {
		if order[block[s]] < 0 {
			order[block[s]] = int32(len(rep))
			rep = append(rep, s)
		}
	}
	trans := make([]int32, count*d.nclass)
	accept := make([]bool, count)
	calls := make([][]call, count)
	for ns, s := range rep {
		for c := range d.nclass {
			t := d.trans[s*d.nclass+c]
			if t >= 0 {
				t = order[block[t]]
			}
			trans[ns*d.nclass+c] = t
		}
		accept[ns] = d.accept[s]
		for _, c := range d.calls[s] {
			calls[ns] = append(calls[ns], call{rule: c.rule, ret: order[block[c.ret]]})
		}
	}
	d.trans, d.accept, d.calls, d.nstates = trans, accept, calls, count
}
