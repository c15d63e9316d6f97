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

// The library is looked for beside the executable on Windows, then in each wspec home folder's
// lib, in the homes' order, and nowhere else (nothing above the working folder).
func TestSearchPathPerOS(t *testing.T) {
	exe := filepath.Join(string(filepath.Separator), "opt", "wspec")
	homes := []string{filepath.Join(string(filepath.Separator), "wh"), filepath.Join(string(filepath.Separator), "cache", "wspec"),
		filepath.Join(string(filepath.Separator), "home", "u", "proj", ".wspec")}
	lib := func(dir, name string) string { return filepath.Join(dir, "lib", name) }

	win := searchPath("windows", exe, homes)
	want := []string{filepath.Join(exe, "webgpu_wrapper.dll")}
	for _, h := range homes {
		want = append(want, lib(h, "webgpu_wrapper.dll"))
	}
	if !slices.Equal(win, want) {
		t.Errorf("windows: %q, want %q", win, want)
	}
	for goos, name := range map[string]string{"linux": "libwebgpu_wrapper.so", "darwin": "libwebgpu_wrapper.dylib"} {
		var want []string
		for _, h := range homes {
			want = append(want, lib(h, name))
		}
		if got := searchPath(goos, exe, homes); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q (nothing beside the executable)", goos, got, want)
		}
	}
	if got := searchPath("linux", "", nil); len(got) != 0 {
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
