package grammar

// Counted repetitions. A bounded repetition X{m,n} compiled as n copies of X inside its rule
// costs a copy of X's automaton per count: a JSON string of maxLength 1000 was 13000 states
// and 9 s of compiling. When X is a code whose words no other word of it begins (every
// accepting state of its automaton is a dead end, as a JSON string's characters and most
// tokens of a format are), the words of X{m,n} split into X's one way only, so X can be a
// rule of its own, called n times: the repetition's rule then has one state per count, each
// with one call, and counting costs a state, not a copy of X. (A nullable X, or one whose
// words may continue into longer ones, would split many ways, which the matcher would follow
// as that many parses; those stay copies.)

// liftMin is the count above which a repetition calls its body rather than copying it.
const liftMin = 16

// maxLifted bounds the count of a repetition that calls its body (one state a count).
const maxLifted = 50000

// liftRepeats rewrites every rule's large repetitions of a prefix-free body (or one its maker
// marked as splitting one way: JSON arrays' items) into calls of a rule holding the body (one
// rule per distinct body node). Nodes may be shared between rules, so the rewrite copies what
// it changes and leaves the rest alone.
func (r *rules) liftRepeats() error {
	lifted := map[*node]int{} // a body node's rule
	seen := map[*node]*node{} // a node's rewrite
	var walk func(n *node) (*node, error)
	walk = func(n *node) (*node, error) {
		if out, ok := seen[n]; ok {
			return out, nil
		}
		out := n
		for i, k := range n.kids {
			nk, err := walk(k)
			if err != nil {
				return nil, err
			}
			if nk != k {
				if out == n {
					c := *n
					c.kids = append([]*node(nil), n.kids...)
					out = &c
				}
				out.kids[i] = nk
			}
		}
		if out.k == kRepeat && max(out.min, out.max) > liftMin && out.max <= maxLifted && out.kids[0].k != kRef {
			body := out.kids[0]
			id, ok := lifted[body]
			if !ok {
				free, err := out.splits, error(nil)
				if !free {
					free, err = r.prefixFree(body)
				}
				if err != nil {
					return nil, err
				}
				id = -1
				if free {
					id = r.add("repeated", body)
				}
				lifted[body] = id
			}
			if id >= 0 {
				out = &node{k: kRepeat, kids: []*node{ref(id)}, min: out.min, max: out.max}
			}
		}
		seen[n] = out
		return out, nil
	}
	for i := 0; i < len(r.body); i++ { // rules added on the way are walked too
		if r.body[i] == nil {
			continue
		}
		b, err := walk(r.body[i])
		if err != nil {
			return err
		}
		r.body[i] = b
	}
	return nil
}

// prefixFree reports whether body, alone, is a non-empty code none of whose words begins
// another: its automaton calls no rule, does not accept at its start, and leaves no accepting
// state. (Its repetitions inside are small: liftRepeats walks kids first.)
func (r *rules) prefixFree(body *node) (bool, error) {
	d, err := compileRule(body, r.budget)
	if err != nil {
		return false, err
	}
	if d.accept[0] {
		return false, nil
	}
	for s := range d.nstates {
		if len(d.calls[s]) > 0 {
			return false, nil
		}
		if !d.accept[s] {
			continue
		}
		for c := range d.nclass {
			if d.trans[s*d.nclass+c] >= 0 {
				return false, nil
			}
		}
	}
	return true, nil
}
