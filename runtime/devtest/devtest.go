// Package devtest gives tests the WebGPU device they run on: the WSPEC_ADAPTER adapter (the
// default one when unset), opened once per test binary. A machine without a device fails the
// tests that ask for one (CI has lavapipe): they never skip. Only tests import it.
package devtest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/weights/home"
)

var (
	mu     sync.Mutex
	shared *runtime.Device
)

// Device returns the test binary's device, opening it on the first call.
func Device(t testing.TB) *runtime.Device {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared == nil {
		d, err := runtime.OpenDevice(runtime.AdapterChoice(os.Getenv("WSPEC_ADAPTER")))
		if err != nil {
			t.Fatalf("no WebGPU device (run ./setup.sh): %v", err)
		}
		shared = d
	}
	return shared
}

// SetHome points the wspec home ($WSPEC_HOME, see weights/home) at the repository's .wspec,
// where ./setup.sh installs the default model, unless it is set already: tests run in their
// package's folder, and the engine looks for the default model (and writes the shipped
// drafters) in the home folders, not above the working folder. For a TestMain.
func SetHome() {
	if os.Getenv(home.Env) != "" {
		return
	}
	dir, err := os.Getwd()
	for err == nil {
		if _, e := os.Stat(filepath.Join(dir, "go.mod")); e == nil {
			os.Setenv(home.Env, filepath.Join(dir, ".wspec"))
			return
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return
		}
		dir = parent
	}
}
