package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/wspec/wspec/cmd/wspec/internal/setup"
)

// dryRun runs `wspec setup --dry-run` with args and returns what it printed.
func dryRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	runErr := runSetup(append([]string{"--dry-run", "--dir", t.TempDir()}, args...))
	os.Stdout = old
	w.Close()
	out, _ := io.ReadAll(r)
	return string(out), runErr
}

func TestSetupDryRunPerOS(t *testing.T) {
	for _, tc := range []struct{ os, arch, pkg, file string }{
		{"linux", "amd64", "bun-webgpu-linux-x64@0.1.7", "package/libwebgpu_wrapper.so"},
		{"windows", "amd64", "bun-webgpu-win32-x64@0.1.5", "package/webgpu_wrapper.dll"},
		{"darwin", "arm64", "bun-webgpu-darwin-arm64@0.1.5", "package/libwebgpu_wrapper.dylib"},
		{"darwin", "amd64", "bun-webgpu-darwin-x64@0.1.5", "package/libwebgpu_wrapper.dylib"},
	} {
		out, err := dryRun(t, "--os", tc.os, "--arch", tc.arch)
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.os, tc.arch, err)
		}
		if !strings.Contains(out, tc.pkg) || !strings.Contains(out, tc.file) || !strings.Contains(out, "https://registry.npmjs.org/") {
			t.Errorf("%s/%s: dry run does not name %s and %s:\n%s", tc.os, tc.arch, tc.pkg, tc.file, out)
		}
	}
	t.Setenv("WSPEC_SKIP_MODEL", "1")
	if out, err := dryRun(t); err != nil || !strings.Contains(out, "default model: skipped") {
		t.Errorf("WSPEC_SKIP_MODEL=1: %v\n%s", err, out)
	}
	if _, err := dryRun(t, "--os", "plan9", "--arch", "amd64"); !errors.Is(err, setup.ErrUnsupported) {
		t.Errorf("unknown OS: want ErrUnsupported, got %v", err)
	}
}
