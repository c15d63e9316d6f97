package engine

import (
	"strings"
	"testing"

	"github.com/wspec/wspec/weights/tokenizer"
)

// The text stream holds back only what could still become a stop string (a prefix of one at
// the end), passes on the rest at once, and cuts at a stop string that straddles tokens.
func TestTextStreamHoldsBackOnlyStopPrefixes(t *testing.T) {
	tok, err := tokenizer.Load(storiesDir)
	if err != nil {
		t.Fatalf("%v (run ./setup.sh)", err)
	}
	run := func(stops []string, text string) (flushed []string, ts *textStream) {
		var got strings.Builder
		ts = newTextStream(tok, GenerateOptions{Stop: stops}, func(s string) { got.WriteString(s) })
		for _, id := range tok.Encode(text, false) {
			ts.push(id)
		}
		ts.flush(false)
		flushed = append(flushed, strings.TrimPrefix(got.String(), " ")) // SentencePiece's leading space
		ts.flush(true)
		return append(flushed, strings.TrimPrefix(got.String(), " ")), ts
	}
	got, _ := run([]string{"zzq"}, "Once upon a time")
	if got[0] != "Once upon a time" {
		t.Errorf("no stop string can start here, yet %q was passed on before the end", got[0])
	}
	got, _ = run([]string{"time to go"}, "Once upon a time")
	if got[0] != "Once upon a " || got[1] != "Once upon a time" {
		t.Errorf("a stop string's start held: %q, then %q", got[0], got[1])
	}
	got, ts := run([]string{"upon a"}, "Once upon a time")
	if got[1] != "Once " || !ts.matched || ts.matchedStop != "upon a" {
		t.Errorf("cut at the stop string: %q (matched %v %q)", got[1], ts.matched, ts.matchedStop)
	}
}
