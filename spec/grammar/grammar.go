package grammar

import (
	"fmt"
	"sync"
)

// Grammar is a compiled grammar bound to a vocabulary: each rule's automaton, and the token
// masks of its states computed so far (shared by every Matcher of it; safe for concurrent
// use).
type Grammar struct {
	rules    []*dfa
	names    []string
	root     int32
	nullable []bool      // the rule matches ""
	first    [][4]uint64 // the bytes a non-empty match of the rule may start with
	endable  [][]bool    // per rule and state: it may return without another byte
	vocab    *Vocab
	source   string // what it was compiled from, for errors and the cache

	mu     sync.Mutex
	local  map[uint64]*localMask // (rule, state) -> the state's context-free token mask
	shared map[string]*entry     // the masks of whole states, by their stacks' contents
}

// build compiles r (rule root first) for vocabulary v.
func build(r *rules, root int, v *Vocab, source string) (*Grammar, error) {
	if err := r.liftRepeats(); err != nil {
		return nil, err
	}
	if len(r.body) > maxRules {
		return nil, fmt.Errorf("%w: the grammar is too large (%d rules, at most %d)", ErrUnsupported, len(r.body), maxRules)
	}
	g := &Grammar{names: r.names, root: int32(root), vocab: v, source: source, local: map[uint64]*localMask{}, shared: map[string]*entry{}}
	for i, b := range r.body {
		if b == nil {
			return nil, fmt.Errorf("%w: rule %q is used but not defined", ErrInvalid, r.names[i])
		}
		d, err := compileRule(b, r.budget)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.names[i], err)
		}
		g.rules = append(g.rules, d)
	}
	g.analyse()
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return g, nil
}

// analyse computes nullable, endable and first by fixpoint iteration.
func (g *Grammar) analyse() {
	n := len(g.rules)
	g.nullable = make([]bool, n)
	g.first = make([][4]uint64, n)
	g.endable = make([][]bool, n)
	for i, d := range g.rules {
		g.endable[i] = append([]bool(nil), d.accept...)
	}
	for changed := true; changed; {
		changed = false
		for i, d := range g.rules {
			for s := range d.nstates {
				if g.endable[i][s] {
					continue
				}
				for _, c := range d.calls[s] {
					if g.nullable[c.rule] && g.endable[i][c.ret] {
						g.endable[i][s], changed = true, true
						break
					}
				}
			}
			if !g.nullable[i] && g.endable[i][0] {
				g.nullable[i], changed = true, true
			}
		}
	}
	// first: the bytes of edges out of states reachable from the start through nullable calls.
	for changed := true; changed; {
		changed = false
		for i, d := range g.rules {
			f := g.first[i]
			seen := map[int32]bool{0: true}
			todo := []int32{0}
			for len(todo) > 0 {
				s := todo[len(todo)-1]
				todo = todo[:len(todo)-1]
				for b := range 256 {
					if d.next(s, byte(b)) >= 0 {
						f[b/64] |= 1 << (b % 64)
					}
				}
				for _, c := range d.calls[s] {
					for w := range f {
						f[w] |= g.first[c.rule][w]
					}
					if g.nullable[c.rule] && !seen[c.ret] {
						seen[c.ret] = true
						todo = append(todo, c.ret)
					}
				}
			}
			if f != g.first[i] {
				g.first[i], changed = f, true
			}
		}
	}
}

// checkLeftRecursion refuses a rule that can call itself before it reads a byte (the
// matcher's stacks would grow without end).
func (g *Grammar) checkLeftRecursion() error {
	// left[i]: the rules rule i may call before it reads a byte.
	left := make([][]int32, len(g.rules))
	for i, d := range g.rules {
		seen := map[int32]bool{0: true}
		todo := []int32{0}
		for len(todo) > 0 {
			s := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for _, c := range d.calls[s] {
				left[i] = append(left[i], c.rule)
				if g.nullable[c.rule] && !seen[c.ret] {
					seen[c.ret] = true
					todo = append(todo, c.ret)
				}
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(g.rules))
	var visit func(i int32) error
	visit = func(i int32) error {
		color[i] = grey
		for _, j := range left[i] {
			switch color[j] {
			case grey:
				return fmt.Errorf("%w: rule %q is left-recursive (it can reach itself before reading a character)", ErrUnsupported, g.names[j])
			case white:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		color[i] = black
		return nil
	}
	for i := range g.rules {
		if color[i] == white {
			if err := visit(int32(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *Grammar) firstHas(rule int32, b byte) bool { return g.first[rule][b/64]&(1<<(b%64)) != 0 }

// Vocab is the vocabulary the grammar's masks are over.
func (g *Grammar) Vocab() *Vocab { return g.vocab }
