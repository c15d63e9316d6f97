package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// The repository's drafter folders are found from a subfolder, and only for modes with a
// checkpoint; a config naming only a mode then gets one, and a named one is kept.
func TestDefaultDrafter(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, DraftersDir, "eagle3")
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
	if got := DefaultDrafter(" EAGLE3"); got != dir {
		t.Errorf("DefaultDrafter(eagle3) = %q, want %q", got, dir)
	}
	for _, mode := range []string{"medusa", "ngram", ""} {
		if got := DefaultDrafter(mode); got != "" {
			t.Errorf("DefaultDrafter(%q) = %q, want none", mode, got)
		}
	}
	if c := WithDefaultDrafter(spec.Config{Mode: "eagle3", NumSpeculativeTokens: 2}); c.Model != dir {
		t.Errorf("a config without a model got %q, want %s", c.Model, dir)
	}
	if c := WithDefaultDrafter(spec.Config{Mode: "eagle3", Model: "/x"}); c.Model != "/x" {
		t.Errorf("a named drafter became %q", c.Model)
	}
	c := WithDefaultDrafter(spec.Config{Mode: "medusa", NumSpeculativeTokens: 2})
	if err := c.Validate(); err == nil {
		t.Error("medusa with no drafter anywhere validated")
	}
}

// A drafter whose config names another target is refused with ErrWrongTarget before the
// target loads; the same drafter naming this target loads.
func TestLoadRefusesDrafterOfAnotherTarget(t *testing.T) {
	draft := copyModel(t)
	if err := weights.WriteTargetID(draft, weights.TargetID{Name: "other", Fingerprint: "llama-d288-other"}); err != nil {
		t.Fatal(err)
	}
	sc := spec.Config{Mode: "draft_model", NumSpeculativeTokens: 2, Model: draft}
	if _, err := Load(storiesDir, Options{Device: testDevice(t), Speculative: &sc}); !errors.Is(err, weights.ErrWrongTarget) ||
		!strings.Contains(err.Error(), draft) {
		t.Fatalf("a drafter for another target: %v, want ErrWrongTarget naming %s", err, draft)
	}
	cfg, err := weights.LoadConfig(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := weights.OpenCheckpoint(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	id, err := weights.TargetIDOf("stories15M", cfg, ck)
	if err != nil {
		t.Fatal(err)
	}
	if err := weights.WriteTargetID(draft, id); err != nil {
		t.Fatal(err)
	}
	e, err := Load(storiesDir, Options{Device: testDevice(t), Speculative: &sc})
	if err != nil {
		t.Fatalf("a drafter for this target: %v", err)
	}
	e.Close()
}
