package toolcall

import (
	"strings"
	"testing"
)

// Fed a byte at a time, each call's partial arguments only grow, always a prefix of the whole
// call's arguments, and reach them (or stay empty: arguments written as a JSON string come
// whole); a name, once given, is the call's.
func TestPartialsGrowIntoTheCalls(t *testing.T) {
	check := func(what string, final []Call, partials func(prefix string) []Partial, text string) (streamed int) {
		t.Helper()
		last := make([]string, len(final))
		for n := 1; n <= len(text); n++ {
			ps := partials(text[:n])
			if len(ps) > len(final) {
				t.Fatalf("%s: %d partial calls after %q, %d in the end", what, len(ps), text[:n], len(final))
			}
			for k, p := range ps {
				switch {
				case p.Name != "" && p.Name != final[k].Name:
					t.Fatalf("%s: call %d named %q, then %q", what, k, p.Name, final[k].Name)
				case !strings.HasPrefix(p.Args, last[k]) || !strings.HasPrefix(final[k].Arguments, p.Args):
					t.Fatalf("%s: call %d's arguments %q after %q (final %q)", what, k, p.Args, last[k], final[k].Arguments)
				}
				last[k] = p.Args
			}
		}
		for k := range final {
			if last[k] != "" {
				streamed++
			}
			if last[k] != final[k].Arguments && last[k] != "" {
				t.Errorf("%s: call %d streamed %q, whole %q", what, k, last[k], final[k].Arguments)
			}
		}
		return streamed
	}
	streamed := 0
	for _, c := range parseCases {
		if len(c.calls) == 0 || c.parser == "mistral" && !strings.Contains(c.text, "[TOOL_CALLS] [") && !strings.Contains(c.text, "[TOOL_CALLS][") {
			continue
		}
		_, final := Parse(c.parser, c.text)
		streamed += check(c.parser+" "+c.text, final, func(prefix string) []Partial {
			s := NewStream(c.parser)
			s.Push(prefix)
			return s.Partials()
		}, c.text)
	}
	if streamed == 0 {
		t.Error("no parser's call was streamed")
	}
	req := `[{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}, {"name": "add", "parameters": {"a": 1, "b": [2, 3]}}]`
	final, err := ParseRequired(req)
	if err != nil {
		t.Fatal(err)
	}
	if n := check("required", final, PartialRequired, req); n != 2 {
		t.Errorf("required: %d of 2 calls streamed", n)
	}
	named := ` {"city": "Pa\"ris", "days": [1, {"x": null}]} `
	call, err := ParseNamed("get_weather", named)
	if err != nil {
		t.Fatal(err)
	}
	if n := check("named", []Call{call}, func(p string) []Partial { return []Partial{PartialNamed("get_weather", p)} }, named); n != 1 {
		t.Error("named: not streamed")
	}
}
