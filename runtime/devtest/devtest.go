// Package devtest gives tests the WebGPU device they run on: the WSPEC_ADAPTER adapter (the
// default one when unset), opened once per test binary. A machine without a device fails the
// tests that ask for one (CI has lavapipe): they never skip. Only tests import it.
package devtest

import (
	"os"
	"sync"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/weights/home/hometest"
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
		SetHome()
		d, err := runtime.OpenDevice(runtime.AdapterChoice(os.Getenv("WSPEC_ADAPTER")))
		if err != nil {
			t.Fatalf("no WebGPU device (run ./setup.sh): %v", err)
		}
		shared = d
	}
	return shared
}

// SetHome points the wspec home at the repository's .wspec (hometest.Set), where ./setup.sh
// installs the default model and the Dawn library. For a TestMain; Device calls it too.
func SetHome() { hometest.Set() }
