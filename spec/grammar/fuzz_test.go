package grammar

import (
	"strings"
	"testing"
)

// The compiler takes what requests send: any JSON schema, regular expression or GBNF grammar
// compiles or is refused with an error (never a panic, never past its budget), and what it
// compiles walks (a mask, a token, the end) without failing. CI's long tier runs each target
// briefly (-fuzz); without -fuzz, the seeds run as tests.

func fuzzCompile(f *testing.F, kind Kind, seeds []string) {
	for _, s := range seeds {
		f.Add(s)
	}
	v := testVocab()
	f.Fuzz(func(t *testing.T, text string) {
		if strings.TrimSpace(text) == "" || len(text) > 4096 {
			return
		}
		g, err := Compile(Spec{Kind: kind, Text: text}, v)
		if err != nil {
			return
		}
		m := g.NewMatcher()
		for range 8 {
			mask, _ := m.Mask()
			next := -1
			for tok := range v.Size() {
				if Allowed(mask, tok) {
					next = tok
					break
				}
			}
			if next < 0 || m.Accept(next) != nil {
				return
			}
		}
	})
}

func FuzzCompileJSONSchema(f *testing.F) {
	fuzzCompile(f, JSONSchema, []string{`{"type":"object","properties":{"a":{"type":"integer","minimum":-5}},"required":["a"]}`,
		`{"anyOf":[{"type":"string","maxLength":3},{"type":"null"}]}`, `{"$defs":{"x":{"enum":[1,"a",null]}},"$ref":"#/$defs/x"}`,
		`{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":4}`, `{"type":"string","pattern":"^[a-c]+$"}`})
}

func FuzzCompileRegex(f *testing.F) {
	fuzzCompile(f, Regex, []string{`[a-z]{2,5}@x\.com`, `(ab|cd)*e?`, `\d+(\.\d+)?`, `[^"\\]{0,8}`, `(?i)yes|no`})
}

func FuzzCompileGBNF(f *testing.F) {
	fuzzCompile(f, GBNF, []string{`root ::= "a" b*` + "\n" + `b ::= [0-9] | "x"`, `root ::= ("(" root ")")? "."`,
		`root ::= [^\n]{1,4} "\n"`, `root ::= "\u00e9" | [\u0100-\u017f]+`})
}
