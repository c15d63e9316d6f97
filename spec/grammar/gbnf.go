package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// GBNF is llama.cpp's grammar format (xgrammar's EBNF is the same): rules `name ::= ...`,
// the output matching rule root; "literals" with \n \t \r \\ \" \xHH \uHHHH escapes,
// [classes] (ranges, ^ negation), . for any character, ( groups ), | alternatives, the
// repetitions * + ? {m} {m,} {m,n}, and # comments.

type gbnfParser struct {
	src   string
	pos   int
	r     *rules
	depth int // groups open
}

// maxGroupDepth bounds the nesting of ( groups ), so that a hostile grammar cannot make the
// parser and the compiler recurse without end.
const maxGroupDepth = 200

func gbnfRules(src string) (*rules, int, error) {
	p := &gbnfParser{src: src, r: newRules()}
	root := p.r.named("root")
	for {
		p.skip(true)
		if p.pos >= len(p.src) {
			break
		}
		name := p.name()
		if name == "" {
			return nil, 0, p.errf("a rule name")
		}
		p.skip(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return nil, 0, p.errf("::= after %q", name)
		}
		p.pos += 3
		body, err := p.alternatives(false)
		if err != nil {
			return nil, 0, err
		}
		i := p.r.named(name)
		if p.r.body[i] != nil {
			return nil, 0, fmt.Errorf("%w: GBNF rule %q is defined twice", ErrInvalid, name)
		}
		p.r.body[i] = body
	}
	if p.r.body[root] == nil {
		return nil, 0, fmt.Errorf("%w: the GBNF grammar has no root rule", ErrInvalid)
	}
	return p.r, root, nil
}

func (p *gbnfParser) errf(want string, a ...any) error {
	line := 1 + strings.Count(p.src[:p.pos], "\n")
	return fmt.Errorf("%w: GBNF line %d: expected %s", ErrInvalid, line, fmt.Sprintf(want, a...))
}

// skip passes blanks and comments (newlines too when newlines, or inside groups).
func (p *gbnfParser) skip(newlines bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n'):
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// atRuleStart reports whether a new rule (name ::=) begins at the position.
func (p *gbnfParser) atRuleStart() bool {
	i := p.pos
	for i < len(p.src) && isNameByte(p.src[i]) {
		i++
	}
	if i == p.pos {
		return false
	}
	for i < len(p.src) && (p.src[i] == ' ' || p.src[i] == '\t') {
		i++
	}
	return strings.HasPrefix(p.src[i:], "::=")
}

func (p *gbnfParser) alternatives(nested bool) (*node, error) {
	var alts []*node
	for {
		s, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		p.skip(nested)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		return alt(alts...), nil
	}
}

func (p *gbnfParser) sequence(nested bool) (*node, error) {
	var items []*node
	for {
		p.skip(true)
		if p.pos >= len(p.src) || p.src[p.pos] == '|' || p.src[p.pos] == ')' || (!nested && p.atRuleStart()) {
			break
		}
		n, err := p.primary()
		if err != nil {
			return nil, err
		}
		if n, err = p.postfix(n); err != nil {
			return nil, err
		}
		items = append(items, n)
	}
	if len(items) == 0 {
		return empty(), nil
	}
	return seq(items...), nil
}

func (p *gbnfParser) primary() (*node, error) {
	c := p.src[p.pos]
	switch {
	case c == '"':
		p.pos++
		var b strings.Builder
		for {
			if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
				return nil, p.errf("the end of a \"literal\"")
			}
			if p.src[p.pos] == '"' {
				p.pos++
				return lit(b.String()), nil
			}
			r, err := p.char()
			if err != nil {
				return nil, err
			}
			b.WriteRune(r)
		}
	case c == '[':
		p.pos++
		neg := p.pos < len(p.src) && p.src[p.pos] == '^'
		if neg {
			p.pos++
		}
		var rs []rune
		for {
			if p.pos >= len(p.src) {
				return nil, p.errf("] to end a class")
			}
			if p.src[p.pos] == ']' {
				p.pos++
				break
			}
			lo, err := p.char()
			if err != nil {
				return nil, err
			}
			hi := lo
			if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
				p.pos++
				if hi, err = p.char(); err != nil {
					return nil, err
				}
			}
			rs = append(rs, lo, hi)
		}
		if neg {
			rs = negate(rs)
		}
		n := runeClass(rs)
		if n == nil {
			return nil, p.errf("a class with at least one character")
		}
		return n, nil
	case c == '.':
		p.pos++
		return runeRange(0, utf8.MaxRune), nil
	case c == '(':
		p.pos++
		if p.depth++; p.depth > maxGroupDepth {
			return nil, p.errf("groups nested at most %d deep", maxGroupDepth)
		}
		defer func() { p.depth-- }()
		n, err := p.alternatives(true)
		if err != nil {
			return nil, err
		}
		p.skip(true)
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, p.errf(")")
		}
		p.pos++
		return n, nil
	case isNameByte(c):
		return ref(p.r.named(p.name())), nil
	}
	return nil, p.errf("a literal, class, rule name or group, not %q", c)
}

// char reads one character of a literal or class, escapes decoded.
func (p *gbnfParser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errf("an escape")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'n':
		return '\n', nil
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.pos+n > len(p.src) {
			return 0, p.errf("%d hex digits", n)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil {
			return 0, p.errf("%d hex digits", n)
		}
		p.pos += n
		if !utf8.ValidRune(rune(v)) || v > utf8.MaxRune {
			return 0, fmt.Errorf("%w: GBNF line %d: \\%c%s names no character (past U+10FFFF, or a surrogate)", ErrInvalid,
				1+strings.Count(p.src[:p.pos], "\n"), c, p.src[p.pos-n:p.pos])
		}
		return rune(v), nil
	}
	return rune(c), nil
}

func (p *gbnfParser) postfix(n *node) (*node, error) {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '*':
			n = star(n)
		case '+':
			n = rep(n, 1, -1)
		case '?':
			n = opt(n)
		case '{':
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return nil, p.errf("} to end a repetition")
			}
			body := strings.TrimSpace(p.src[p.pos+1 : p.pos+end])
			lo, hi, comma := body, body, strings.Contains(body, ",")
			if comma {
				lo, hi, _ = strings.Cut(body, ",")
				lo, hi = strings.TrimSpace(lo), strings.TrimSpace(hi)
			}
			m, err := strconv.Atoi(lo)
			if err != nil || m < 0 {
				return nil, p.errf("{m}, {m,} or {m,n}")
			}
			x := m
			if comma {
				x = -1
				if hi != "" {
					if x, err = strconv.Atoi(hi); err != nil || x < m {
						return nil, p.errf("{m,n} with n >= m")
					}
				}
			}
			p.pos += end
			n = rep(n, m, x)
		default:
			return n, nil
		}
		p.pos++
	}
	return n, nil
}

// negate is the complement of rune ranges (pairs) within 0..MaxRune.
func negate(rs []rune) []rune {
	type rr struct{ lo, hi rune }
	var in []rr
	for i := 0; i+1 < len(rs); i += 2 {
		in = append(in, rr{rs[i], rs[i+1]})
	}
	for i := 1; i < len(in); i++ { // insertion sort: classes are short
		for j := i; j > 0 && in[j].lo < in[j-1].lo; j-- {
			in[j], in[j-1] = in[j-1], in[j]
		}
	}
	var out []rune
	next := rune(0)
	for _, r := range in {
		if r.lo > next {
			out = append(out, next, r.lo-1)
		}
		next = max(next, r.hi+1)
	}
	if next <= utf8.MaxRune {
		out = append(out, next, utf8.MaxRune)
	}
	return out
}
