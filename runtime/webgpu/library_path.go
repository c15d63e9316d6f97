//go:build !js

package webgpu

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

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
	return run + ", or set " + LibraryEnv + " to the path of " + LibraryFile(goos) + " (see README.md)"
}

// FindLibrary returns the library path: $WSPEC_WEBGPU_LIB when set (it must exist), else the
// first existing file of searchPath for this OS.
func FindLibrary() (string, error) {
	if p := os.Getenv(LibraryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v; %s", ErrLibraryNotFound, LibraryEnv, p, err, SetupHint)
		}
		return p, nil
	}
	var wd, exeDir, cacheDir string
	if d, err := os.Getwd(); err == nil {
		wd = d
	}
	if exe, err := os.Executable(); err == nil {
		exeDir = filepath.Dir(exe)
	}
	if d, err := os.UserCacheDir(); err == nil {
		cacheDir = d
	}
	for _, p := range searchPath(goruntime.GOOS, os.Getenv(home.Env), wd, exeDir, cacheDir) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no %s in $%s/lib, in .wspec/lib above the working directory or the executable, or in the user cache folder's wspec/lib; %s",
		ErrLibraryNotFound, LibraryName, home.Env, SetupHint)
}

// searchPath lists where the library of goos is looked for, in order (empty folders are left
// out): on Windows first beside the executable (where Windows itself looks for a program's
// DLLs); then $WSPEC_HOME/lib/<file> (where `wspec setup` installs when it is set); then .wspec/lib/<file> in the working directory and every folder above it, the same
// above the executable's folder; last <user cache dir>/wspec/lib/<file> (~/.cache on Linux,
// ~/Library/Caches on macOS, %LocalAppData% on Windows).
func searchPath(goos, homeDir, wd, exeDir, cacheDir string) []string {
	name := LibraryFile(goos)
	var out []string
	if goos == "windows" && exeDir != "" {
		out = append(out, filepath.Join(exeDir, name))
	}
	if homeDir != "" {
		out = append(out, filepath.Join(homeDir, "lib", name))
	}
	for _, dir := range []string{wd, exeDir} {
		for dir != "" {
			out = append(out, filepath.Join(dir, ".wspec", "lib", name))
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if cacheDir != "" {
		out = append(out, filepath.Join(cacheDir, "wspec", "lib", name))
	}
	return out
}
