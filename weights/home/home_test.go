package home

import (
	"os"
	"path/filepath"
	"testing"
)

// Find searches $WSPEC_HOME, then the user cache folder, then .wspec in the working folder,
// and nothing above it.
func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	homeDir, cache, work := filepath.Join(root, "home"), filepath.Join(root, "cache"), filepath.Join(root, "work", "sub")
	t.Setenv(Env, homeDir)
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Chdir(work0(t, work))
	put := func(dir string) {
		if err := os.MkdirAll(filepath.Join(dir, "models", "m"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "models", "m", "config.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Above the working folder: not found.
	put(filepath.Join(root, "work", ".wspec"))
	if p, ok, tried := Find(filepath.Join("models", "m"), "config.json"); ok || len(tried) != 3 {
		t.Fatalf("found %q above the working folder (tried %v)", p, tried)
	}
	for _, dir := range []string{filepath.Join(work, ".wspec"), filepath.Join(cache, "wspec"), homeDir} {
		put(dir)
		if p, ok, _ := Find(filepath.Join("models", "m"), "config.json"); !ok || p != filepath.Join(dir, "models", "m") {
			t.Fatalf("with %s: found %q, %v", dir, p, ok)
		}
	}
	if Default() != homeDir {
		t.Errorf("Default() = %q with %s set", Default(), Env)
	}
	t.Setenv(Env, "")
	if Default() != filepath.Join(cache, "wspec") {
		t.Errorf("Default() = %q without %s", Default(), Env)
	}
}

func work0(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
