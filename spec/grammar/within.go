package grammar

import (
	"fmt"
	"strings"
)

// A string schema with both a format this engine writes and a pattern (zod 4 writes both:
// format "date-time" beside a pattern whose fractions of a second have no bound, format
// "email" beside a pattern with lookaheads) is written by the format's pattern when every
// string that pattern writes matches the schema's pattern too: then nothing the schema says
// is dropped, and the output stays as bounded as the format's. Leading negative lookaheads,
// (?!X) at the pattern's start, are checked the same way: no string the format writes may
// start with a match of X. A pattern they do not satisfy is compiled as it is (or refused).

// formatWithin reports whether every string the format pattern fre writes matches the schema's
// pattern pre (each a whole JSON string's content, escaped as written).
func formatWithin(fre, pre string, b *budget) (bool, error) {
	ahead, rest := leadingLookaheads(pre)
	f, err := regexDFA(fre, b)
	if err != nil {
		return false, err
	}
	p, err := regexDFA(rest, b)
	if err != nil {
		return false, nil // the pattern's rest is not compiled either: not shown within
	}
	if ok, err := subset(f, p, b); !ok || err != nil {
		return false, err
	}
	for _, x := range ahead {
		xd, err := regexDFA(`(?s:`+x+`).*`, b)
		if err != nil {
			return false, nil
		}
		if ok, err := disjoint(f, xd, b); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// leadingLookaheads splits a pattern into its leading negative lookaheads' expressions and the
// rest ("^(?!A)(?!B)C$" is [A, B] and "^C$").
func leadingLookaheads(re string) ([]string, string) {
	anchor := strings.HasPrefix(re, "^")
	s := strings.TrimPrefix(re, "^")
	var out []string
	for strings.HasPrefix(s, "(?!") {
		end := closingParen(s)
		if end < 0 {
			break
		}
		out = append(out, s[3:end])
		s = s[end+1:]
	}
	if anchor {
		s = "^" + s
	}
	return out, s
}

// closingParen is the index of the parenthesis closing the group s starts with (-1: none),
// past escapes and character classes.
func closingParen(s string) int {
	depth, inClass := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if i+1 < len(s) && s[i+1] == ']' {
				i++ // "[]...]": the first ] is a member
			}
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// regexDFA compiles a regular expression over a JSON string's content to one rule's automaton.
func regexDFA(re string, b *budget) (*dfa, error) {
	n, err := regexNode(re, true)
	if err != nil {
		return nil, err
	}
	return compileRule(n, b)
}

// pair is a state of two automata run side by side (-1: dead).
type pair struct{ a, b int32 }

// product walks the pairs of states a and b reach on the same bytes, from their starts,
// calling visit on each; a pair where a is dead is not followed. It stops when visit says so.
func product(a, b *dfa, bud *budget, visit func(p pair) bool) error {
	seen := map[pair]bool{{0, 0}: true}
	todo := []pair{{0, 0}}
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if !visit(p) {
			return nil
		}
		if err := bud.spend(256); err != nil {
			return err
		}
		for c := range 256 {
			na := a.next(p.a, byte(c))
			if na < 0 {
				continue
			}
			nb := int32(-1)
			if p.b >= 0 {
				nb = b.next(p.b, byte(c))
			}
			if q := (pair{na, nb}); !seen[q] {
				seen[q] = true
				todo = append(todo, q)
			}
		}
	}
	return nil
}

// subset reports whether every word a matches, b matches.
func subset(a, b *dfa, bud *budget) (bool, error) {
	if err := noCalls(a, b); err != nil {
		return false, err
	}
	ok := true
	err := product(a, b, bud, func(p pair) bool {
		ok = !a.accept[p.a] || (p.b >= 0 && b.accept[p.b])
		return ok
	})
	return ok, err
}

// disjoint reports whether no word matches both a and b.
func disjoint(a, b *dfa, bud *budget) (bool, error) {
	if err := noCalls(a, b); err != nil {
		return false, err
	}
	ok := true
	err := product(a, b, bud, func(p pair) bool {
		ok = !(a.accept[p.a] && p.b >= 0 && b.accept[p.b])
		return ok
	})
	return ok, err
}

// noCalls refuses automata that call rules (the product walks bytes only).
func noCalls(ds ...*dfa) error {
	for _, d := range ds {
		for _, cs := range d.calls {
			if len(cs) > 0 {
				return fmt.Errorf("grammar: a pattern's automaton calls a rule")
			}
		}
	}
	return nil
}
