//go:build !js

package webgpu

import (
	"os"
	"testing"

	"github.com/wspec/wspec/weights/home/hometest"
)

// TestMain points the wspec home at the repository's .wspec, where ./setup.sh installs the
// library FindLibrary looks for.
func TestMain(m *testing.M) {
	hometest.Set()
	os.Exit(m.Run())
}
