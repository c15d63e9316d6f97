package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// accepts feeds text byte by byte (the test vocabulary's first 256 tokens are the bytes) and
// reports whether the matcher took it all and may end there.
func accepts(g *Grammar, text string) bool {
	m := g.NewMatcher()
	for _, b := range []byte(text) {
		if m.Accept(int(b)) != nil {
			return false
		}
	}
	return m.End()
}

// countedGrammar compiles a schema whose bound of 20000 must be counted, not copied: its
// automata have about one state a count.
func countedGrammar(t *testing.T, schema string) *Grammar {
	t.Helper()
	g, err := Compile(Spec{Kind: JSONSchema, Text: schema}, testVocab())
	if err != nil {
		t.Fatal(err)
	}
	states := 0
	for _, d := range g.rules {
		states += d.nstates
	}
	if states > 21000 {
		t.Errorf("%s: %d automaton states: the repeated part was copied", schema, states)
	}
	return g
}

// Long strings count their characters with a call a character (lift.go): a maxLength of
// 20000 compiles to about one state a count, takes exactly 18000..20000 characters (two-byte
// ones counted once), and random walks of a short bounded string give strings of lengths
// within the bounds.
func TestCountedStrings(t *testing.T) {
	v := testVocab()
	g := countedGrammar(t, `{"type":"string","minLength":18000,"maxLength":20000}`)
	for n, want := range map[int]bool{17999: false, 18000: true, 20000: true, 20001: false} {
		if got := accepts(g, `"`+strings.Repeat("a", n)+`"`); got != want {
			t.Errorf("%d characters: matched %v", n, got)
		}
		if got := accepts(g, `"`+strings.Repeat("é", n)+`"`); got != want {
			t.Errorf("%d two-byte characters: matched %v", n, got)
		}
	}
	if !accepts(g, `"`+strings.Repeat(`a\n`, 9000)+`"`) || accepts(g, `"`+strings.Repeat(`a\n`, 10001)+`"`) {
		t.Error("escapes are not counted one character each")
	}
	short, err := Compile(Spec{Kind: JSONSchema, Text: `{"type":"string","minLength":17,"maxLength":30}`}, v)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		text, ended := walk(t, short, rng, 200, 0.3, true)
		if !ended {
			continue
		}
		s := strings.Trim(strings.TrimSpace(text), `"`)
		s = strings.NewReplacer(`\\`, "b", `\"`, "q", `\n`, "n", `\t`, "t", `\r`, "r", `\b`, "b", `\f`, "f", `\/`, "s").Replace(s)
		for strings.Contains(s, `\u`) {
			i := strings.Index(s, `\u`)
			s = s[:i] + "u" + s[i+6:]
		}
		if n := utf8.RuneCountInString(s); n < 17 || n > 30 {
			t.Errorf("%q: %d characters", text, n)
		}
	}
}

// A repetition whose body's words may continue into longer ones is copied, not counted by
// calls (counting would split a text many ways), and still matches what it should.
func TestAmbiguousRepetitionCopied(t *testing.T) {
	g, err := Compile(Spec{Kind: Regex, Text: `(a|ab){17,20}`}, testVocab())
	if err != nil {
		t.Fatal(err)
	}
	if len(g.rules) != 1 {
		t.Errorf("%d rules: the body was lifted", len(g.rules))
	}
	for text, want := range map[string]bool{strings.Repeat("ab", 17): true, strings.Repeat("a", 20): true, strings.Repeat("ab", 16): false, strings.Repeat("a", 21): false} {
		if accepts(g, text) != want {
			t.Errorf("%q: matched %v", text, !want)
		}
	}
}

func BenchmarkCompileMaxLength20000(b *testing.B) {
	v := testVocab()
	for b.Loop() {
		if _, err := Compile(Spec{Kind: JSONSchema, Text: `{"type":"string","maxLength":20000}`}, v); err != nil {
			b.Fatal(err)
		}
	}
}

// An array of up to 20000 items counts them by calls too (its items split at their commas
// one way), and takes exactly 15000..20000 of them.
func TestCountedItems(t *testing.T) {
	g := countedGrammar(t, `{"type":"array","items":{"type":"integer"},"minItems":15000,"maxItems":20000}`)
	for n, want := range map[int]bool{14999: false, 15000: true, 20000: true, 20001: false} {
		items := strings.Repeat("12, ", n-1) + "3"
		if got := accepts(g, "["+items+"]"); got != want {
			t.Errorf("%d items: matched %v", n, got)
		}
	}
}

// Random walks of a counted array of objects (masks checked against Accept token by token)
// end as arrays of 17..30 items that parse.
func TestCountedItemsWalk(t *testing.T) {
	g, err := Compile(Spec{Kind: JSONSchema, Text: `{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},"minItems":17,"maxItems":30}`}, testVocab())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ended := 0
	for range 6 {
		text, ok := walk(t, g, rng, 600, 0.5, true)
		if !ok {
			continue
		}
		ended++
		var items []map[string]int
		if err := json.Unmarshal([]byte(text), &items); err != nil || len(items) < 17 || len(items) > 30 {
			t.Errorf("%q: %d items, %v", text, len(items), err)
		}
	}
	if ended == 0 {
		t.Error("no walk ended")
	}
}
