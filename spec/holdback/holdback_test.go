package holdback

import (
	"testing"
	"unicode/utf8"
)

func TestPartial(t *testing.T) {
	for _, c := range []struct {
		text, marker string
		want         int
	}{
		{"hello <tool", "<tool_call>", 5},
		{"hello <tool_call>", "<tool_call>", 0}, // whole: the parser's, not held
		{"hello", "<tool_call>", 0},
		{"a<", "<", 0},
		{"x</thi", "</think>", 5},
		{"", "</think>", 0},
		{"ab", "abc", 2},
		{"caf\u00e9 \u00e9t", "\u00e9t\u00e9", 3},
	} {
		if got := Partial(c.text, c.marker); got != c.want {
			t.Errorf("Partial(%q, %q) = %d, want %d", c.text, c.marker, got, c.want)
		}
		if n := Partial(c.text, c.marker); !utf8.ValidString(c.text[:len(c.text)-n]) {
			t.Errorf("Partial(%q, %q) cuts a character", c.text, c.marker)
		}
	}
	if got := Any("the end. Th", []string{"The End", "The", "x"}); got != 2 {
		t.Errorf("Any: %d, want 2", got)
	}
}
