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

// The default model is found in $WSPEC_HOME, else in the user cache folder, else in .wspec in
// the working folder, and not above it: a binary run anywhere finds what `wspec setup` put
// in the cache. Not found, the error names every folder it looked in.
func TestDefaultModelSearch(t *testing.T) {
	abs, err := filepath.Abs(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	work := filepath.Join(root, "work", "sub")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	t.Setenv("WSPEC_HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "cache"))
	link := func(dir string) string {
		p := filepath.Join(dir, "models", DefaultModel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link(filepath.Join(root, "work", ".wspec")) // above the working folder: not looked at
	if d, err := DefaultModelDir(); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "home")) ||
		!strings.Contains(err.Error(), filepath.Join(root, "cache", "wspec")) {
		t.Fatalf("found %q above the working folder, or the error does not list the folders: %v", d, err)
	}
	for _, dir := range []string{filepath.Join(work, ".wspec"), filepath.Join(root, "cache", "wspec"), filepath.Join(root, "home")} {
		want := link(dir)
		if got, err := DefaultModelDir(); err != nil || got != want {
			t.Fatalf("with %s: %q, %v", dir, got, err)
		}
	}
	// The shipped drafters come from the binary, into the home folder.
	e, err := Load("", Options{Device: testDevice(t), Speculative: &spec.Config{Mode: "eagle3", NumSpeculativeTokens: 2}})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := os.Stat(filepath.Join(root, "home", "drafters", "stories15M", "eagle3", "config.json")); err != nil {
		t.Errorf("the shipped eagle3 drafter was not written to the home folder: %v", err)
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
