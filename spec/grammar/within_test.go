package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// zod 4's patterns beside its formats (z.toJSONSchema of uuid(), datetime() and email()).
var zod4Patterns = map[string]string{
	"uuid":      `^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000)$`,
	"date-time": `^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z))$`,
	"email":     `^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$`,
}

// A format beside a pattern its strings keep to (zod 4's uuid, date-time and email, the last
// with lookaheads) is written by the format: every walk gives a string the pattern (checked
// with the lookaheads by hand) matches, and the fractions of a second stay bounded. A pattern
// the format leaves (digits only, or a lookahead the format breaks) is not replaced by it.
func TestFormatWithinPattern(t *testing.T) {
	v := testVocab()
	for format, pattern := range zod4Patterns {
		ok, err := formatWithin(formats[format], pattern, nil)
		if err != nil || !ok {
			t.Fatalf("%s: within %v, %v", format, ok, err)
		}
		schema := `{"type":"string","format":"` + format + `","pattern":` + quoted(pattern) + `}`
		g, err := Compile(Spec{Kind: JSONSchema, Text: schema}, v)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		ahead, rest := leadingLookaheads(pattern)
		re := regexp.MustCompile(rest)
		rng := rand.New(rand.NewPCG(7, uint64(len(format))))
		for range 10 {
			text, ended := walk(t, g, rng, 400, 0.9, false)
			s := strings.Trim(strings.TrimSpace(text), `"`)
			if !ended || !re.MatchString(s) {
				t.Errorf("%s: %q (ended %v) does not match the pattern", format, text, ended)
			}
			for _, x := range ahead {
				if regexp.MustCompile(`^(?s:` + x + `)`).MatchString(s) {
					t.Errorf("%s: %q breaks the lookahead (?!%s)", format, s, x)
				}
			}
		}
	}
	for _, c := range []struct{ format, pattern string }{
		{"uuid", `^[0-9]+$`},
		{"email", `^(?!.*\+)[^@]+@[^@]+$`}, // the format writes "+"
		{"date-time", `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+01:00$`},
	} {
		if ok, err := formatWithin(formats[c.format], c.pattern, nil); ok || err != nil {
			t.Errorf("%s beside %s: within %v, %v", c.format, c.pattern, ok, err)
		}
	}
}

func TestLeadingLookaheads(t *testing.T) {
	for re, want := range map[string]string{
		`^(?!\.)(?!.*\.\.)a$`: `\.|.*\.\.|^a$`,
		`(?![(])b`:            `[(]|b`,
		`^(?!(a|b)c)d$`:       `(a|b)c|^d$`,
		`^abc$`:               `^abc$`,
	} {
		ahead, rest := leadingLookaheads(re)
		if got := strings.Join(append(ahead, rest), "|"); got != want {
			t.Errorf("%s: %s, want %s", re, got, want)
		}
	}
}

func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
