//go:build !js

package webgpu

/*
#cgo linux LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

var (
	loadMu     sync.Mutex
	loadedPath string
	generation string
)

// Load opens the library at path (FindLibrary's when path is empty) once per process. It checks
// the Dawn generation by symbol before resolving anything: an unknown one is refused, since its
// enum numbers and struct layouts would silently differ from abi.h.
func Load(path string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loadedPath != "" {
		if path != "" && absolute(path) != loadedPath {
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
	path = absolute(path)
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
	path = absolute(path)
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var errBuf [1024]C.char
	var genBuf [128]C.char
	rc := C.wspec_probe(cpath, &errBuf[0], C.size_t(len(errBuf)), &genBuf[0], C.size_t(len(genBuf)))
	return C.GoString(&genBuf[0]), loadError(rc, path, C.GoString(&errBuf[0]))
}

// absolute makes path absolute, so that the OS loader opens that file: dlopen would search the
// system's library path for a bare file name, and LoadLibraryEx with an altered search path
// needs a full path.
func absolute(path string) string {
	if p, err := filepath.Abs(path); err == nil {
		return p
	}
	return path
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
