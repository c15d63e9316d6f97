package engine

import (
	"os"
	"testing"

	"github.com/wspec/wspec/runtime/devtest"
)

// TestMain points the wspec home at the repository's .wspec (devtest.SetHome), where the
// shipped drafters are written.
func TestMain(m *testing.M) {
	devtest.SetHome()
	os.Exit(m.Run())
}
