//go:build !js

package web

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// WasmPackage is the main package of the page's engine.
const WasmPackage = "./cmd/wspec-wasm"

// ModuleRoot finds the wspec source tree at dir or above it (its go.mod names the module).
func ModuleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/wspec/wspec\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("web: no wspec source at or above %s (the page's engine is built from it: run in a wspec checkout, or give --source)", abs)
		}
	}
}

// Build compiles the page's engine from the source at root into dir/wspec.wasm with the Go
// toolchain on the PATH (GOOS=js GOARCH=wasm, no cgo) and copies that release's wasm_exec.js
// beside it; it returns both paths.
func Build(root, dir string) (wasm, wasmExec string, err error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", "", fmt.Errorf("web: building the page's engine needs the Go toolchain (go) on the PATH: %w", err)
	}
	wasm = filepath.Join(dir, "wspec.wasm")
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", wasm, WasmPackage)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("web: go build %s: %w\n%s", WasmPackage, err, out)
	}
	out, err := exec.Command(gobin, "env", "GOROOT").Output()
	if err != nil {
		return "", "", fmt.Errorf("web: go env GOROOT: %w", err)
	}
	goroot := strings.TrimSpace(string(out))
	src := filepath.Join(goroot, "lib", "wasm", "wasm_exec.js")
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join(goroot, "misc", "wasm", "wasm_exec.js") // Go before 1.24
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return "", "", fmt.Errorf("web: the Go release's wasm_exec.js: %w", err)
	}
	wasmExec = filepath.Join(dir, "wasm_exec.js")
	return wasm, wasmExec, os.WriteFile(wasmExec, b, 0o644)
}
