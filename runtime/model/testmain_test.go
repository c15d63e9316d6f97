package model

import (
	"os"
	"testing"

	"github.com/wspec/wspec/runtime"
)

var sharedDevice *runtime.Device

// testDevice returns the default adapter's device, opened once for the package's tests. A
// machine without one fails the tests (CI has lavapipe): they never skip.
func testDevice(t testing.TB) *runtime.Device {
	t.Helper()
	if sharedDevice == nil {
		d, err := runtime.OpenDevice(runtime.AdapterChoice(os.Getenv("WSPEC_ADAPTER")))
		if err != nil {
			t.Fatalf("no WebGPU device: %v", err)
		}
		sharedDevice = d
	}
	return sharedDevice
}
