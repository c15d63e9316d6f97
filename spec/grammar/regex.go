package grammar

import (
	"fmt"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// Regular expressions are RE2's syntax (Go's regexp/syntax, Perl flags), matched whole: the
// output is one string the expression matches from its first byte to its last. Anchors (^ $
// \A \z) are accepted and mean nothing more; word boundaries are refused.

// regexNode translates expression re into grammar nodes. In a JSON string (inJSON), the
// characters JSON escapes are written escaped (a literal " as \") and classes leave out ",
// \ and control characters, so the bytes are a valid JSON string body whose value the
// expression matches.
func regexNode(re string, inJSON bool) (*node, error) {
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%w: regular expression %q: %v", ErrInvalid, re, err)
	}
	if err := anchorsHold(p); err != nil {
		return nil, fmt.Errorf("regular expression %q: %w", re, err)
	}
	n, err := fromSyntax(p, inJSON)
	if err != nil {
		return nil, fmt.Errorf("regular expression %q: %w", re, err)
	}
	return n, nil
}

func fromSyntax(r *syntax.Regexp, inJSON bool) (*node, error) {
	switch r.Op {
	case syntax.OpNoMatch:
		return nil, fmt.Errorf("%w: an expression that matches nothing", ErrUnsupported)
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return empty(), nil
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, fmt.Errorf("%w: word boundaries (\\b, \\B)", ErrUnsupported)
	case syntax.OpLiteral:
		var kids []*node
		for _, c := range r.Rune {
			if r.Flags&syntax.FoldCase != 0 {
				if n := runeClass(foldRanges(c)); n != nil {
					kids = append(kids, restrict(n, c, inJSON))
					continue
				}
			}
			kids = append(kids, literalRune(c, inJSON))
		}
		return seq(kids...), nil
	case syntax.OpCharClass:
		rs := r.Rune
		if inJSON {
			rs = jsonSafe(rs)
		}
		n := runeClass(rs)
		if n == nil {
			return nil, fmt.Errorf("%w: a character class with no character allowed", ErrUnsupported)
		}
		return n, nil
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		rs := []rune{0, utf8.MaxRune}
		if r.Op == syntax.OpAnyCharNotNL {
			rs = []rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}
		}
		if inJSON {
			rs = jsonSafe(rs)
		}
		return runeClass(rs), nil
	case syntax.OpCapture:
		return fromSyntax(r.Sub[0], inJSON)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		sub, err := fromSyntax(r.Sub[0], inJSON)
		if err != nil {
			return nil, err
		}
		switch r.Op {
		case syntax.OpStar:
			return star(sub), nil
		case syntax.OpPlus:
			return rep(sub, 1, -1), nil
		case syntax.OpQuest:
			return opt(sub), nil
		}
		return rep(sub, r.Min, r.Max), nil
	case syntax.OpConcat, syntax.OpAlternate:
		var kids []*node
		for _, s := range r.Sub {
			n, err := fromSyntax(s, inJSON)
			if err != nil {
				return nil, err
			}
			kids = append(kids, n)
		}
		if r.Op == syntax.OpConcat {
			return seq(kids...), nil
		}
		return alt(kids...), nil
	}
	return nil, fmt.Errorf("%w: regular expression operator %v", ErrUnsupported, r.Op)
}

// literalRune is c's UTF-8 bytes, JSON-escaped in a JSON string.
func literalRune(c rune, inJSON bool) *node {
	if inJSON {
		switch {
		case c == '"':
			return lit(`\"`)
		case c == '\\':
			return lit(`\\`)
		case c < 0x20:
			return lit(fmt.Sprintf(`\u%04x`, c))
		}
	}
	return lit(string(c))
}

// restrict is a case-folded literal's class, or the literal itself where JSON needs escapes.
func restrict(n *node, c rune, inJSON bool) *node {
	if inJSON && (c == '"' || c == '\\' || c < 0x20) {
		return literalRune(c, true)
	}
	return n
}

func foldRanges(c rune) []rune {
	var rs []rune
	for f := c; ; {
		rs = append(rs, f, f)
		if f = unicode.SimpleFold(f); f == c {
			break
		}
	}
	return rs
}

// jsonSafe removes from rune ranges the characters a JSON string must escape.
func jsonSafe(rs []rune) []rune {
	var out []rune
	for i := 0; i+1 < len(rs); i += 2 {
		out = appendMinus(out, rs[i], rs[i+1])
	}
	return out
}

// appendMinus appends lo..hi less the characters 0..0x1f, '"' and '\\'.
func appendMinus(out []rune, lo, hi rune) []rune {
	gaps := [][2]rune{{0x20, '"' - 1}, {'"' + 1, '\\' - 1}, {'\\' + 1, utf8.MaxRune}}
	for _, g := range gaps {
		a, b := max(lo, g[0]), min(hi, g[1])
		if a <= b {
			out = append(out, a, b)
		}
	}
	return out
}

// anchorsHold refuses an expression whose text anchors cannot hold, so that it matches
// nothing: ^ (or \A) after what must be some text, $ (or \z) before it, as in a$b.
func anchorsHold(r *syntax.Regexp) error {
	if r.Op == syntax.OpConcat {
		for i, k := range r.Sub {
			var before, after int
			for _, b := range r.Sub[:i] {
				before += minLen(b)
			}
			for _, a := range r.Sub[i+1:] {
				after += minLen(a)
			}
			switch {
			case k.Op == syntax.OpBeginText && before > 0:
				return fmt.Errorf("%w: it matches nothing (^ after text)", ErrInvalid)
			case k.Op == syntax.OpEndText && after > 0:
				return fmt.Errorf("%w: it matches nothing ($ before text)", ErrInvalid)
			}
		}
	}
	for _, k := range r.Sub {
		if err := anchorsHold(k); err != nil {
			return err
		}
	}
	return nil
}

// minLen is the fewest characters r matches.
func minLen(r *syntax.Regexp) int {
	switch r.Op {
	case syntax.OpLiteral:
		return len(r.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(r.Sub[0])
	case syntax.OpRepeat:
		return r.Min * minLen(r.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, k := range r.Sub {
			n += minLen(k)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, k := range r.Sub {
			if m := minLen(k); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // empty, anchors, stars and quests
}
