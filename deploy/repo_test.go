package deploy

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the wspec repository this module sits in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(file))
}

// extensionVersion is the Gateway API Inference Extension release whose CRDs and charts the
// tests use (go.mod requires it; docs/scaling-out.md names it).
const extensionVersion = "v1.5.0"

// extensionDir is the extension module's folder in the module cache.
func extensionDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}|{{.Version}}", "sigs.k8s.io/gateway-api-inference-extension").Output()
	if err != nil {
		t.Fatalf("go list the inference extension: %v", err)
	}
	dir, version, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
	if version != extensionVersion || dir == "" {
		t.Fatalf("the inference extension is %s at %q; the tests and docs are for %s", version, dir, extensionVersion)
	}
	return dir
}
