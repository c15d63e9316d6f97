package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wspec/wspec/runtime/webgpu"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binOut  []byte
)

// wspecBinary builds the wspec binary once per test binary, for tests that run it as users do.
func wspecBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wspec-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "wspec")
		binOut, binErr = exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	})
	if binErr != nil {
		t.Fatalf("go build: %v\n%s", binErr, binOut)
	}
	return binPath
}

// Run from a subfolder with an empty home, the binary finds no Dawn library, though one sits in
// .wspec/lib of the folder above (nothing walks up), and says every place it looked.
func TestLibraryNotFoundFromSubfolder(t *testing.T) {
	bin := wspecBinary(t)
	root := t.TempDir()
	above := filepath.Join(root, ".wspec", "lib", webgpu.LibraryName)
	sub, emptyHome, cache := filepath.Join(root, "sub"), filepath.Join(root, "home"), filepath.Join(root, "cache")
	for _, d := range []string{filepath.Dir(above), sub, emptyHome, cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(above, []byte("not looked at"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "devices")
	cmd.Dir = sub
	cmd.Env = append(os.Environ(), "WSPEC_HOME="+emptyHome, "XDG_CACHE_HOME="+cache, "HOME="+root, webgpu.LibraryEnv+"=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("wspec devices found a library from %s with an empty home:\n%s", sub, out)
	}
	msg := string(out)
	for _, want := range []string{
		filepath.Join(emptyHome, "lib", webgpu.LibraryName),
		filepath.Join(cache, "wspec", "lib", webgpu.LibraryName),
		filepath.Join(sub, ".wspec", "lib", webgpu.LibraryName),
		"setup",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not name %s:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, above) {
		t.Errorf("the library above the working folder was looked at:\n%s", msg)
	}
}

// The binary links none of the packages that only tests may import: the reference model and
// the tests' helpers.
func TestBinaryLinksNoTestPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		switch strings.TrimPrefix(p, "github.com/wspec/wspec/") {
		case "runtime/ref", "runtime/devtest", "spec/sched/schedtest", "weights/home/hometest", "spec/web/webtest":
			t.Errorf("wspec links %s, which only tests may import", p)
		}
	}
}
