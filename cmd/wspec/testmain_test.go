package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights/home"
)

// TestMain points the wspec home at the repository's .wspec (where ./setup.sh installs the
// default model) unless $WSPEC_HOME says otherwise: the tests run in this package's folder,
// and the CLI looks for the default model in the home folders, not above the working folder.
// The shipped drafters are written there too.
func TestMain(m *testing.M) {
	if os.Getenv(home.Env) == "" {
		if abs, err := filepath.Abs(filepath.Join("..", "..", ".wspec")); err == nil {
			os.Setenv(home.Env, abs)
		}
	}
	os.Exit(m.Run())
}
