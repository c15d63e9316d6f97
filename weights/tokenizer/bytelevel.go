package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// byteToRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for
// themselves, the other bytes for U+0100 onwards, so that every byte is a
// visible character in the vocabulary. runeToByte is its inverse.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelString maps each byte of s to its character.
func byteLevelString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

// byteLevelDecode maps a byte-level token's characters back to bytes; a
// character outside the map (in a malformed vocabulary) stands for its own
// UTF-8 encoding.
func byteLevelDecode(piece string) []byte {
	out := make([]byte, 0, len(piece))
	for _, r := range piece {
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// splitter is a Split pre-tokenizer: a regex whose matches cut the text, kept as pieces of
// their own (behavior Isolated), joined to the text before them (MergedWithPrevious) or after
// them (MergedWithNext), or dropped (Removed).
//
// Go's RE2 has no lookahead, so the pattern is approximated: the alternative
// `\s+(?!\S)` (a run of whitespace not followed by a non-space) of the GPT-2,
// Llama-3 and Qwen2 patterns is compiled as `\s+`, and then a match that is
// all whitespace, does not end in a line break, has at least two characters
// and is followed by a non-space character gives back its last character —
// exactly what the lookahead's backtracking does, because no earlier
// alternative of those patterns matches such a run. `\s` and `\S` are
// widened to Unicode White_Space (RE2's `\s` is ASCII only). Other lookaround
// is refused with ErrUnsupported.
type splitter struct {
	re        *regexp.Regexp
	lookahead bool // the pattern had \s+(?!\S)
	behavior  string
}

// splitBehaviors are the Split behaviors pieces implements.
var splitBehaviors = map[string]bool{"Isolated": true, "MergedWithPrevious": true, "MergedWithNext": true, "Removed": true}

// unicodeSpace is Unicode White_Space as an RE2 class body.
const unicodeSpace = `\t\n\v\f\r\x{85}\p{Z}`

func newSplitter(pattern, behavior string) (*splitter, error) {
	const la = `\s+(?!\S)`
	if !splitBehaviors[behavior] {
		return nil, fmt.Errorf("%w: Split pre-tokenizer with behavior %q", ErrUnsupported, behavior)
	}
	s := &splitter{lookahead: strings.Contains(pattern, la), behavior: behavior}
	pattern = strings.ReplaceAll(pattern, la, `\s+`)
	for _, bad := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
		if strings.Contains(pattern, bad) {
			return nil, fmt.Errorf("%w: pre-tokenizer regex with lookaround %q", ErrUnsupported, bad)
		}
	}
	goPattern, err := widenSpaces(pattern)
	if err != nil {
		return nil, err
	}
	if s.re, err = regexp.Compile(goPattern); err != nil {
		return nil, fmt.Errorf("%w: pre-tokenizer regex %q: %v", ErrUnsupported, pattern, err)
	}
	return s, nil
}

// widenSpaces rewrites \s and \S to Unicode White_Space.
func widenSpaces(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			switch e := p[i]; {
			case e == 's' && inClass:
				b.WriteString(unicodeSpace)
			case e == 's':
				b.WriteString("[" + unicodeSpace + "]")
			case e == 'S' && inClass:
				return "", fmt.Errorf("%w: \\S inside a character class in %q", ErrUnsupported, p)
			case e == 'S':
				b.WriteString("[^" + unicodeSpace + "]")
			default:
				b.WriteByte(c)
				b.WriteByte(e)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				i++
				b.WriteByte('^')
			}
			if i+1 < len(p) && p[i+1] == ']' { // a leading ] is literal
				i++
				b.WriteByte(']')
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func isSpace(r rune) bool { return unicode.IsSpace(r) }

// pieces splits text by the regex's matches as the behavior says. A nil splitter keeps text
// whole.
func (s *splitter) pieces(text string) []string {
	if s == nil {
		if text == "" {
			return nil
		}
		return []string{text}
	}
	var out []string
	gap := 0   // start of text not yet emitted
	carry := 0 // MergedWithNext: start of a match waiting for the text after it
	emit := func(from, to int) {
		if to > from {
			out = append(out, text[from:to])
		}
	}
	for pos := 0; pos < len(text); {
		loc := s.re.FindStringIndex(text[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if start == end { // empty match: step over one character
			_, size := utf8.DecodeRuneInString(text[start:])
			pos = start + size
			continue
		}
		if s.lookahead {
			end = s.trimLookahead(text, start, end)
		}
		switch s.behavior {
		case "Isolated":
			emit(gap, start)
			emit(start, end)
		case "Removed":
			emit(gap, start)
		case "MergedWithPrevious":
			emit(gap, end)
		case "MergedWithNext":
			emit(carry, start)
			carry = start
		}
		gap, pos = end, end
	}
	if s.behavior == "MergedWithNext" {
		emit(carry, len(text))
	} else {
		emit(gap, len(text))
	}
	return out
}

// splitChain is a Sequence of Split pre-tokenizers: each splits every piece of the one before.
type splitChain []*splitter

func (c splitChain) pieces(text string) []string {
	if len(c) == 0 {
		if text == "" {
			return nil
		}
		return []string{text}
	}
	out := c[0].pieces(text)
	for _, s := range c[1:] {
		var next []string
		for _, p := range out {
			next = append(next, s.pieces(p)...)
		}
		out = next
	}
	return out
}

// trimLookahead applies `\s+(?!\S)`: an all-whitespace match of two or more
// characters, not ending in a line break and followed by a non-space, gives
// back its last character.
func (s *splitter) trimLookahead(text string, start, end int) int {
	if end >= len(text) {
		return end
	}
	if next, _ := utf8.DecodeRuneInString(text[end:]); isSpace(next) {
		return end
	}
	m := text[start:end]
	n := 0
	for _, r := range m {
		if !isSpace(r) {
			return end
		}
		n++
	}
	last, size := utf8.DecodeLastRuneInString(m)
	if n < 2 || last == '\n' || last == '\r' {
		return end
	}
	return end - size
}
