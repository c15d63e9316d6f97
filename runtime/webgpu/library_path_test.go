//go:build !js

package webgpu

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLibraryFilePerOS(t *testing.T) {
	for goos, want := range map[string]string{
		"linux":   "libwebgpu_wrapper.so",
		"windows": "webgpu_wrapper.dll",
		"darwin":  "libwebgpu_wrapper.dylib",
	} {
		if got := LibraryFile(goos); got != want {
			t.Errorf("LibraryFile(%q) = %q, want %q", goos, got, want)
		}
	}
}

func TestSearchPathPerOS(t *testing.T) {
	wd := filepath.Join(string(filepath.Separator), "home", "u", "proj")
	exe := filepath.Join(string(filepath.Separator), "opt", "wspec")
	cache := filepath.Join(string(filepath.Separator), "cache")
	lib := func(dir, name string) string { return filepath.Join(dir, ".wspec", "lib", name) }

	win := searchPath("windows", "", wd, exe, cache)
	if want := filepath.Join(exe, "webgpu_wrapper.dll"); win[0] != want {
		t.Fatalf("windows: first candidate %q, want the DLL beside the executable %q", win[0], want)
	}
	for _, want := range []string{lib(wd, "webgpu_wrapper.dll"), lib(filepath.Dir(wd), "webgpu_wrapper.dll"), lib(exe, "webgpu_wrapper.dll")} {
		if !slices.Contains(win, want) {
			t.Errorf("windows: %q not searched: %q", want, win)
		}
	}
	if want := filepath.Join(cache, "wspec", "lib", "webgpu_wrapper.dll"); win[len(win)-1] != want {
		t.Errorf("windows: last candidate %q, want %q", win[len(win)-1], want)
	}

	for goos, name := range map[string]string{"linux": "libwebgpu_wrapper.so", "darwin": "libwebgpu_wrapper.dylib"} {
		got := searchPath(goos, "", wd, exe, cache)
		if got[0] != lib(wd, name) {
			t.Errorf("%s: first candidate %q, want %q (nothing beside the executable)", goos, got[0], lib(wd, name))
		}
		for _, p := range got {
			if filepath.Base(p) != name {
				t.Errorf("%s: candidate %q is not %s", goos, p, name)
			}
		}
		// The working directory's folders come before the executable's.
		if i, j := slices.Index(got, lib(string(filepath.Separator), name)), slices.Index(got, lib(exe, name)); i < 0 || j < 0 || i > j {
			t.Errorf("%s: order of %q: root at %d, executable at %d", goos, got, i, j)
		}
	}
	// $WSPEC_HOME/lib, where `wspec setup` installs when it is set, comes first (on Windows
	// after the executable's folder).
	h := filepath.Join(string(filepath.Separator), "wh")
	if got := searchPath("linux", h, wd, exe, cache); got[0] != filepath.Join(h, "lib", "libwebgpu_wrapper.so") {
		t.Errorf("linux with WSPEC_HOME: first candidate %q", got[0])
	}
	if got := searchPath("windows", h, wd, exe, cache); got[1] != filepath.Join(h, "lib", "webgpu_wrapper.dll") {
		t.Errorf("windows with WSPEC_HOME: second candidate %q", got[1])
	}
	if got := searchPath("linux", "", "", "", ""); len(got) != 0 {
		t.Errorf("no folders known: want no candidates, got %q", got)
	}
}

func TestSetupHintPerOS(t *testing.T) {
	if h := setupHint("linux"); !strings.Contains(h, "./setup.sh") || !strings.Contains(h, "libwebgpu_wrapper.so") {
		t.Errorf("linux hint %q", h)
	}
	if h := setupHint("windows"); strings.Contains(h, "setup.sh") || !strings.Contains(h, "wspec setup") || !strings.Contains(h, "webgpu_wrapper.dll") {
		t.Errorf("windows hint %q", h)
	}
}
