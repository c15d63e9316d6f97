package model

import (
	"os"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/devtest"
)

// TestMain points the wspec home at the repository's .wspec (devtest.SetHome): some tests open
// a device of their own.
func TestMain(m *testing.M) {
	devtest.SetHome()
	os.Exit(m.Run())
}

// testDevice is the package's tests' device (devtest.Device).
func testDevice(t testing.TB) *runtime.Device { return devtest.Device(t) }
