//go:build !js

package drafters

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights/home"
)

// Dir writes each shipped drafter into the home folder once, as shipped, and puts back a file
// that was changed; ngram has none.
func TestDir(t *testing.T) {
	t.Setenv(home.Env, t.TempDir())
	entries, err := fs.ReadDir(files, Model)
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, e := range entries {
		embedded = append(embedded, e.Name())
	}
	if got := Modes(); !slices.Equal(got, embedded) || !slices.IsSorted(got) {
		t.Fatalf("Modes() = %v, the binary embeds %v", got, embedded)
	}
	for _, mode := range Modes() {
		dir, err := Dir(" " + mode)
		if err != nil {
			t.Fatal(err)
		}
		if dir != filepath.Join(home.Default(), "drafters", Model, mode) {
			t.Fatalf("%s: written to %s", mode, dir)
		}
		cfg := filepath.Join(dir, "config.json")
		want, err := files.ReadFile("stories15M/" + mode + "/config.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Dir(mode); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(cfg); err != nil || string(got) != string(want) {
			t.Fatalf("%s: a changed config.json was not put back: %q, %v", mode, got, err)
		}
	}
	if dir, err := Dir("ngram"); dir != "" || err != nil {
		t.Fatalf("ngram: %q, %v", dir, err)
	}
}
