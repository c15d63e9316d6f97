//go:build long

package main

import (
	"strings"
	"testing"
)

// --speculative-mode alone uses the repository's drafter, with the same greedy text as plain
// decoding and a speculation line on stderr. (The long tier: the head's and the verify
// steps' kernels take most of a minute to compile cold; spec/engine's quick tests check the
// drafters' greedy equality.)
func TestGenerateSpeculativeRuns(t *testing.T) {
	const prompt = "Ben had a red kite."
	plain, _, err := captured(t, func() error { return runGenerate([]string{"--max-tokens", "24", prompt}) })
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"eagle3", "medusa"} {
		out, errOut, err := captured(t, func() error {
			return runGenerate([]string{"--max-tokens", "24", "--speculative-mode", mode, prompt})
		})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if out != plain || !strings.Contains(errOut, "speculation:") {
			t.Errorf("--speculative-mode %s: %q (stderr %q), plain %q", mode, out, errOut, plain)
		}
	}
}
