package reasoning

import "testing"

// Each parser splits a whole reply, and the same reply streamed in pieces cut at every place
// (two cuts each), into the same reasoning and content.
func TestSplit(t *testing.T) {
	for _, c := range []struct {
		parser, text, reasoning, content string
	}{
		{"qwen3", "<think>\nTwo and two.\n</think>\n\nFour.", "\nTwo and two.\n", "\n\nFour."},
		{"qwen3", "Four, with thinking off.", "", "Four, with thinking off."},
		{"qwen3", "\n<think>still thinking when cut", "still thinking when cut", ""},
		{"qwen3", "<thin", "", "<thin"},
		{"qwen3", "a <think> later is content", "", "a <think> later is content"},
		{"deepseek_r1", "Two and two.</think>Four.", "Two and two.", "Four."},
		{"deepseek_r1", "<think>Two and two.</think>\n\nFour.", "Two and two.", "\n\nFour."},
		{"deepseek_r1", "cut while thinking </thi", "cut while thinking </thi", ""},
		{"deepseek_r1", "", "", ""},
	} {
		r, a := Split(c.parser, c.text)
		if r != c.reasoning || a != c.content {
			t.Errorf("%s %q: reasoning %q content %q, want %q %q", c.parser, c.text, r, a, c.reasoning, c.content)
			continue
		}
		for i := 0; i <= len(c.text); i++ {
			for _, j := range []int{i, (i + len(c.text)) / 2, len(c.text)} {
				s := NewStream(c.parser)
				var gr, ga string
				for _, piece := range []string{c.text[:i], c.text[i:j], c.text[j:]} {
					r, a := s.Push(piece)
					gr, ga = gr+r, ga+a
				}
				r, a := s.Finish()
				gr, ga = gr+r, ga+a
				if gr != c.reasoning || ga != c.content {
					t.Fatalf("%s %q cut at %d, %d: %q %q, want %q %q", c.parser, c.text, i, j, gr, ga, c.reasoning, c.content)
				}
			}
		}
	}
}
