package grammar

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// testVocab has every byte as a token (id = the byte), then multi-byte tokens that cross
// grammar symbols, then one special token (no bytes) and padding: a mask's edges.
var testPieces = []string{`{"`, `":`, `",`, `"}`, `": "`, ` "`, `true`, `false`, `null`, `12`, `.5`, `e+`, `],`, `[{`, `}]`,
	`abc`, `name`, `"name": "`, `age`, `00`, `-1`, `\n  `, `\"`, `\\`, `é`, "\xc3", "\xa9", `yes`, `no`, `maybe`, `ye`, `2024-`, `-0`, ` `}

func testVocab() *Vocab {
	size := 256 + len(testPieces) + 3
	return NewVocab(size, func(id int) []byte {
		switch {
		case id < 256:
			return []byte{byte(id)}
		case id < 256+len(testPieces):
			return []byte(testPieces[id-256])
		}
		return nil // a special token, and padding
	})
}

// walk samples one output from the matcher (a random allowed token each step, or the end
// when allowed, with probability pEnd), checking each mask against Accept token by token.
// It returns the text and whether it ended (false: maxTokens ran out).
func walk(t *testing.T, g *Grammar, rng *rand.Rand, maxTokens int, pEnd float64, check bool) (string, bool) {
	t.Helper()
	m := g.NewMatcher()
	v := g.Vocab()
	var text []byte
	for range maxTokens {
		mask, end := m.Mask()
		var allowed []int
		for id := range v.Size() {
			ok := Allowed(mask, id)
			if check {
				mk := m.Mark()
				err := m.Accept(id)
				m.Reset(mk)
				if ok != (err == nil) {
					t.Fatalf("after %q: token %d (%q) masked %v, Accept says %v", text, id, v.Bytes(id), ok, err)
				}
			}
			if ok {
				allowed = append(allowed, id)
			}
		}
		if end && m.End() != end {
			t.Fatalf("Mask and End disagree after %q", text)
		}
		if end && (len(allowed) == 0 || rng.Float64() < pEnd) {
			return string(text), true
		}
		if len(allowed) == 0 {
			t.Fatalf("after %q: no token allowed and the output cannot end", text)
		}
		tok := allowed[rng.IntN(len(allowed))]
		if err := m.Accept(tok); err != nil {
			t.Fatal(err)
		}
		text = append(text, v.Bytes(tok)...)
	}
	return string(text), false
}

func TestRegexWalks(t *testing.T) {
	v := testVocab()
	for _, re := range []string{`[a-c]{2,5}`, `(yes|no|maybe)`, `\d{4}-\d{2}-\d{2}`, `-?(0|[1-9]\d*)(\.\d+)?`, `é+x?`, `[^a-z]{1,3}`,
		`(ab|a)(bc|c)?`, `[A-Z][a-z]*( [A-Z][a-z]*){0,2}`, `(?i)name`, `.{0,4}!`} {
		g, err := Compile(Spec{Kind: Regex, Text: re}, v)
		if err != nil {
			t.Fatalf("%s: %v", re, err)
		}
		full := regexp.MustCompile(`^(?:` + re + `)$`)
		rng := rand.New(rand.NewPCG(1, uint64(len(re))))
		ended := 0
		for i := range 30 {
			text, done := walk(t, g, rng, 40, 0.3, i < 3)
			if done {
				ended++
				if !full.MatchString(text) {
					t.Errorf("%s: generated %q, which it does not match", re, text)
				}
			}
		}
		if ended < 10 {
			t.Errorf("%s: only %d of 30 walks ended", re, ended)
		}
	}
}

func TestChoiceAndGBNF(t *testing.T) {
	v := testVocab()
	g, err := Compile(Spec{Kind: Choice, Choices: []string{"yes", "no", "maybe", "ye"}}, v)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(2, 2))
	for range 200 {
		text, ended := walk(t, g, rng, 10, 0.5, false)
		if !ended || !map[string]bool{"yes": true, "no": true, "maybe": true, "ye": true}[text] {
			t.Fatalf("choice gave %q (ended %v)", text, ended)
		}
		seen[text] = true
	}
	if len(seen) != 4 {
		t.Errorf("200 draws gave only %v", seen)
	}
	arith := `root ::= expr
expr ::= term (("+" | "-") term)*   # sums
term ::= num | "(" expr ")"
num ::= [1-9] [0-9]{0,2}`
	g, err = Compile(Spec{Kind: GBNF, Text: arith}, v)
	if err != nil {
		t.Fatal(err)
	}
	ok := regexp.MustCompile(`^[0-9+\-()]+$`)
	for i := range 50 {
		text, ended := walk(t, g, rng, 30, 0.3, i < 3)
		if ended && (!ok.MatchString(text) || strings.Count(text, "(") != strings.Count(text, ")")) {
			t.Errorf("grammar gave %q", text)
		}
	}
	for src, want := range map[string]error{
		`root ::= a`:              ErrInvalid,
		`root ::= root "x" | "y"`: ErrUnsupported,
		`root ::= "x`:             ErrInvalid,
		`rot ::= "x"`:             ErrInvalid,
		`root ::= [a-z]{3,1}`:     ErrInvalid,
		`root ::= ` + strings.Repeat("(", 300) + `"x"` + strings.Repeat(")", 300): ErrInvalid,
	} {
		if _, err := Compile(Spec{Kind: GBNF, Text: src}, v); !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", src, err, want)
		}
	}
}

func TestIntRange(t *testing.T) {
	v := testVocab()
	for _, c := range []struct {
		lo, hi       int64
		hasLo, hasHi bool
	}{{0, 9, true, true}, {5, 1234, true, true}, {-250, -3, true, true}, {-17, 42, true, true}, {100, 0, true, false}, {0, -7, false, true}, {19, 20, true, true}} {
		r := newRules()
		root := r.add("root", intRange(c.lo, c.hi, c.hasLo, c.hasHi))
		g, err := build(r, root, v, "")
		if err != nil {
			t.Fatal(err)
		}
		for n := int64(-2000); n <= 2000; n++ {
			in := (!c.hasLo || n >= c.lo) && (!c.hasHi || n <= c.hi)
			m := g.NewMatcher()
			ok := true
			for _, b := range []byte(itoa(n)) {
				if m.Accept(int(b)) != nil {
					ok = false
					break
				}
			}
			if ok = ok && m.End(); ok != in {
				t.Fatalf("%+v: %d matched %v", c, n, ok)
			}
		}
	}
}

func itoa(n int64) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		if n /= 10; n == 0 {
			return s
		}
	}
}

// Integer bounds of any size are kept: zod 4's int() writes ±(2^53 - 1); a bound past what an
// unbounded integer may be written with bounds nothing more.
func TestSchemaLargeIntegerBounds(t *testing.T) {
	v := testVocab()
	for _, c := range []struct {
		schema  string
		in, out []string
	}{
		{`{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991}`,
			[]string{"0", "-5", "9007199254740991", "-9007199254740991"}, []string{"9007199254740992", "-9007199254740992", "1.5"}},
		{`{"type":"integer","minimum":-1e300,"maximum":1e400}`, []string{"12", "-3", "9999999999999999"}, []string{"x"}},
		{`{"type":"number","exclusiveMinimum":0,"maximum":9007199254740991}`, []string{"1.5", "9007199254740990.5"}, []string{"0", "-1"}},
	} {
		g, err := Compile(Spec{Kind: JSONSchema, Text: c.schema}, v)
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		for _, want := range []bool{true, false} {
			texts := c.in
			if !want {
				texts = c.out
			}
			for _, text := range texts {
				m := g.NewMatcher()
				ok := true
				for _, b := range []byte(text) {
					if m.Accept(int(b)) != nil {
						ok = false
						break
					}
				}
				if ok = ok && m.End(); ok != want {
					t.Errorf("%s: %q matched %v", c.schema, text, ok)
				}
			}
		}
	}
}

// An expression or grammar whose language is empty, or that names no character, is refused
// when it compiles: nothing could be written under it.
func TestEmptyLanguagesRefused(t *testing.T) {
	for _, s := range []Spec{
		{Kind: Regex, Text: `a$b`}, {Kind: Regex, Text: `a^b`}, {Kind: Regex, Text: `(x|yz)\Aq`},
		{Kind: GBNF, Text: `root ::= "\UFFFFFFFF"`}, {Kind: GBNF, Text: `root ::= "\uD800"`}, {Kind: GBNF, Text: `root ::= [\U00110000-\U00110001]`},
	} {
		if _, err := Compile(s, testVocab()); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s %q: %v, want ErrInvalid", s.Kind, s.Text, err)
		}
	}
	for _, re := range []string{`^ab$`, `\Aab\z`, `(^a|b)c`, `a*$`, `^$`} {
		if _, err := Compile(Spec{Kind: Regex, Text: re}, testVocab()); err != nil {
			t.Errorf("%q: %v", re, err)
		}
	}
}
