package web

import (
	"os"
	"testing"

	"github.com/wspec/wspec/runtime/devtest"
)

// TestMain points the wspec home at the repository's .wspec (devtest.SetHome), where the
// default model is and the shipped drafters are written.
func TestMain(m *testing.M) {
	devtest.SetHome()
	os.Exit(m.Run())
}
