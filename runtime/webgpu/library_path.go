//go:build !js

package webgpu

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"github.com/wspec/wspec/weights/home"
)

// LibraryEnv names the environment variable that overrides where the library is looked for.
const LibraryEnv = "WSPEC_WEBGPU_LIB"

// LibraryFile is the file name of the Dawn build in the bun-webgpu-<os>-<arch> npm package for
// goos (what `wspec setup` installs into .wspec/lib).
func LibraryFile(goos string) string {
	switch goos {
	case "windows":
		return "webgpu_wrapper.dll"
	case "darwin":
		return "libwebgpu_wrapper.dylib"
	default:
		return "libwebgpu_wrapper.so"
	}
}

// LibraryName is LibraryFile of the running OS.
var LibraryName = LibraryFile(goruntime.GOOS)

// SetupHint is what to run when the library or an adapter is missing.
var SetupHint = setupHint(goruntime.GOOS)

func setupHint(goos string) string {
	run := "run `wspec setup` (it downloads Dawn into the user cache folder's wspec/lib)"
	if goos == "linux" {
		run = "run ./setup.sh (it installs the lavapipe Vulkan driver on Debian, then runs `wspec setup`, which downloads Dawn into .wspec/lib)"
	}
	return run + ", or set " + LibraryEnv + " to the path of " + LibraryFile(goos) + " (see `go doc github.com/wspec/wspec/runtime/webgpu`)"
}

// FindLibrary returns the library's path: $WSPEC_WEBGPU_LIB when set (it must exist), else the
// first existing file of searchPath for this OS. Its error names every path it tried.
func FindLibrary() (string, error) {
	if p := os.Getenv(LibraryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v; %s", ErrLibraryNotFound, LibraryEnv, p, err, SetupHint)
		}
		return p, nil
	}
	var exeDir string
	if exe, err := os.Executable(); err == nil {
		exeDir = filepath.Dir(exe)
	}
	tried := searchPath(goruntime.GOOS, exeDir, home.Dirs())
	for _, p := range tried {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no %s at %s; %s", ErrLibraryNotFound, LibraryName, strings.Join(tried, ", "), SetupHint)
}

// searchPath lists where the library of goos is looked for, in order: on Windows first beside
// the executable (where Windows itself looks for a program's DLLs); then lib/<file> in each
// wspec home folder (homes: weights/home's Dirs, where `wspec setup` and ./setup.sh install).
// Nothing above the working folder or the executable is searched, so a binary finds the same
// library wherever it runs.
func searchPath(goos, exeDir string, homes []string) []string {
	name := LibraryFile(goos)
	var out []string
	if goos == "windows" && exeDir != "" {
		out = append(out, filepath.Join(exeDir, name))
	}
	for _, d := range homes {
		out = append(out, filepath.Join(d, "lib", name))
	}
	return out
}
