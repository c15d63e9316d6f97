package model

import (
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/devtest"
)

// testDevice is the package's tests' device (devtest.Device).
func testDevice(t testing.TB) *runtime.Device { return devtest.Device(t) }
