// Package webgpu is wspec's binding to the compute subset of webgpu.h. The library (Dawn) is
// dlopen'ed at run time, so building and vetting need no library on the machine; every failure
// comes back as a Go error. Struct layouts follow the pinned Dawn build (see abi.h).
package webgpu

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"unsafe"
)

// LibraryEnv names the environment variable that overrides where the library is looked for.
const LibraryEnv = "WSPEC_WEBGPU_LIB"

// LibraryName is the file name of the Dawn build in the bun-webgpu-<os>-<arch> npm package of
// this operating system (setup.sh installs the Linux one).
var LibraryName = map[string]string{"darwin": "libwebgpu_wrapper.dylib", "windows": "webgpu_wrapper.dll"}[goruntime.GOOS]

func init() {
	if LibraryName == "" {
		LibraryName = "libwebgpu_wrapper.so"
	}
}

// Sentinel errors; the concrete errors wrap them with %w.
var (
	ErrLibraryNotFound   = errors.New("webgpu library not found")
	ErrLibraryLoad       = errors.New("webgpu library failed to load")
	ErrUnknownGeneration = errors.New("unknown Dawn generation")
	ErrNoAdapter         = errors.New("no WebGPU adapter")
	ErrDeviceLost        = errors.New("webgpu device lost")
	ErrValidation        = errors.New("webgpu error")
	ErrTimeout           = errors.New("webgpu wait timed out")
)

// SetupHint is what to run when the library or an adapter is missing.
var SetupHint = "run ./setup.sh (it installs Dawn and the lavapipe Vulkan driver), or set " + LibraryEnv + " to the path of libwebgpu_wrapper (see README.md)"

var (
	loadMu     sync.Mutex
	loadedPath string
	generation string
)

// FindLibrary returns the library path: $WSPEC_WEBGPU_LIB when set (it must exist), else the
// first .wspec/lib/libwebgpu_wrapper.so found walking up from the working directory and from
// the executable's directory, else ~/.cache/wspec/lib/libwebgpu_wrapper.so.
func FindLibrary() (string, error) {
	if p := os.Getenv(LibraryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v; %s", ErrLibraryNotFound, LibraryEnv, p, err, SetupHint)
		}
		return p, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, ".wspec", "lib", LibraryName)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "wspec", "lib", LibraryName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no %s in .wspec/lib above the working directory or the executable; %s", ErrLibraryNotFound, LibraryName, SetupHint)
}

// Load dlopens the library at path (FindLibrary's when path is empty) once per process. It checks
// the Dawn generation by symbol before resolving anything: an unknown one is refused, since its
// enum numbers and struct layouts would silently differ from abi.h.
func Load(path string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loadedPath != "" {
		if path != "" && path != loadedPath {
			return fmt.Errorf("%w: %s requested but %s is already loaded in this process", ErrLibraryLoad, path, loadedPath)
		}
		return nil
	}
	if path == "" {
		p, err := FindLibrary()
		if err != nil {
			return err
		}
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: %v; %s", ErrLibraryNotFound, err, SetupHint)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var errBuf [1024]C.char
	var genBuf [128]C.char
	rc := C.wspec_load(cpath, &errBuf[0], C.size_t(len(errBuf)), &genBuf[0], C.size_t(len(genBuf)))
	if err := loadError(rc, path, C.GoString(&errBuf[0])); err != nil {
		return err
	}
	loadedPath = path
	generation = C.GoString(&genBuf[0])
	return nil
}

// Probe opens the library at path, reports its Dawn generation and closes it again; an
// unknown generation or a file that is no loadable library is an error.
func Probe(path string) (string, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var errBuf [1024]C.char
	var genBuf [128]C.char
	rc := C.wspec_probe(cpath, &errBuf[0], C.size_t(len(errBuf)), &genBuf[0], C.size_t(len(genBuf)))
	return C.GoString(&genBuf[0]), loadError(rc, path, C.GoString(&errBuf[0]))
}

func loadError(rc C.int, path, msg string) error {
	switch rc {
	case 0:
		return nil
	case 2:
		return fmt.Errorf("%w: %s: %s", ErrUnknownGeneration, path, msg)
	default:
		return fmt.Errorf("%w: %s: %s", ErrLibraryLoad, path, msg)
	}
}

// Loaded returns the loaded library's path and Dawn generation ("" when none is loaded).
func Loaded() (path, gen string) {
	loadMu.Lock()
	defer loadMu.Unlock()
	return loadedPath, generation
}

// stringView makes a WGPUStringView of a C string made with C.CString.
func stringView(s *C.char, n int) C.WGPUStringView {
	return C.WGPUStringView{data: s, length: C.size_t(n)}
}

func goString(v C.WGPUStringView) string {
	if v.data == nil {
		return ""
	}
	if v.length == C.size_t(^uint(0)) {
		return C.GoString(v.data)
	}
	return C.GoStringN(v.data, C.int(v.length))
}
