package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The repository's drafter folders are found from a subfolder, and only for modes with a
// checkpoint; --speculative-mode alone then names one.
func TestDefaultDrafter(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, draftersDir, "eagle3")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	if got := defaultDrafter("eagle3"); got != dir {
		t.Errorf("defaultDrafter(eagle3) = %q, want %q", got, dir)
	}
	for _, mode := range []string{"medusa", "ngram", ""} {
		if got := defaultDrafter(mode); got != "" {
			t.Errorf("defaultDrafter(%q) = %q, want none", mode, got)
		}
	}
	sc, err := speculativeConfig("eagle3", 4, "", "")
	if err != nil || sc.Model != dir {
		t.Errorf("speculativeConfig(eagle3) = %+v, %v; want the model %s", sc, err, dir)
	}
	sc, err = speculativeConfig("", 0, "", `{"method":"eagle3","num_speculative_tokens":2}`)
	if err != nil || sc.Model != dir {
		t.Errorf("--speculative-config without a model = %+v, %v; want the model %s", sc, err, dir)
	}
}
