package model

import (
	"os"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/tokenizer"
)

// stories15M is converted by setup.sh into the project's .wspec folder.
const storiesDir = "../../.wspec/models/stories15M"

// TestStories15MGreedyMatchesReference: 200 greedy tokens of the real model on the device equal
// the pure-Go reference forward's, token for token, for three prompts.
func TestStories15MGreedyMatchesReference(t *testing.T) {
	if _, err := os.Stat(storiesDir + "/config.json"); err != nil {
		t.Fatalf("stories15M not converted (%v): run ./setup.sh", err)
	}
	tok, err := tokenizer.Load(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	host, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(testDevice(t), host, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 200 tokens each, not stopping at the end-of-story BOS (the model then starts another
	// story): the comparison is always 200 tokens long.
	var stop []int
	for _, prompt := range []string{"Once upon a time", "The little dog", "Lily and Tom went to the park. They"} {
		ids := tok.Encode(prompt, true)
		want := ref.Generate(host, ids, 200, kernelref.SamplingParams{}, 0, stop)
		s := m.NewSession()
		var got []int
		next := ids
		for len(got) < len(want) {
			out, err := s.Forward(next, 0, nil, batch.Sampling{})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, out[0])
			next = out
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%q: token %d is %d on the device, %d in the reference\ndevice:    %q\nreference: %q",
					prompt, i, got[i], want[i], tok.Decode(got), tok.Decode(want))
			}
		}
		s.Release()
		if m.Pool().InUse() != 0 {
			t.Fatalf("%d pages leaked", m.Pool().InUse())
		}
		t.Logf("%q -> %d tokens identical: %q", prompt, len(want), tok.Decode(want))
	}
}
