package runtime

import (
	"os"
	"testing"
)

var sharedDevice *Device

// testDevice returns the default adapter's device, opened once for the package's tests. A
// machine without one fails the tests (CI has lavapipe): they never skip.
func testDevice(t testing.TB) *Device {
	t.Helper()
	if sharedDevice == nil {
		d, err := OpenDevice(AdapterChoice(os.Getenv("WSPEC_ADAPTER")))
		if err != nil {
			t.Fatalf("no WebGPU device: %v", err)
		}
		sharedDevice = d
	}
	return sharedDevice
}
