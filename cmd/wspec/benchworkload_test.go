package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights/home"
	"github.com/wspec/wspec/weights/tokenizer"
)

// TestWorkloadsFitTheDefaultModel: every workload's longest request (its last turn's prompt,
// built on replies of its default --tokens, plus that reply) fits the default model's context
// of 256 tokens, and no two sessions of the history and users workloads share their first
// 64-byte block (the router's prefix block; the whole opening when shorter), so a cache hit there is a session's own history.
func TestWorkloadsFitTheDefaultModel(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join(home.Default(), "models", "stories15M"))
	if err != nil {
		t.Fatal(err)
	}
	reply := strings.TrimSpace(strings.Repeat("ball ", 64))
	for name, wl := range workloads {
		longest := 0
		for i := range 48 {
			prompt := wl.first(i)
			for turn := 1; turn < wl.turns; turn++ {
				history := prompt + " " + strings.Join(strings.Fields(reply)[:wl.tokens], " ")
				prompt = wl.next(i, turn, history)
			}
			longest = max(longest, len(tok.Encode(prompt, true))+wl.tokens)
		}
		if longest > 256 {
			t.Errorf("%s: a request of %d tokens does not fit a context of 256", name, longest)
		}
		t.Logf("%s: longest request %d tokens", name, longest)
	}
	for _, name := range []string{"history", "users"} {
		seen := map[string]int{}
		for i := range 48 {
			p := workloads[name].first(i)
			p = p[:min(len(p), routeBlock)]
			if j, ok := seen[p]; ok {
				t.Errorf("%s: sessions %d and %d open with the same block %q", name, j, i, p)
			}
			seen[p] = i
		}
	}
}
