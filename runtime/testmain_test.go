package runtime

import (
	"os"
	"testing"

	"github.com/wspec/wspec/weights/home/hometest"
)

// TestMain points the wspec home at the repository's .wspec, where the Dawn library is.
func TestMain(m *testing.M) {
	hometest.Set()
	os.Exit(m.Run())
}

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
