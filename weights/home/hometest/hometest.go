// Package hometest points tests at the repository's wspec home: `go test` runs each package's
// tests in the package's folder, and wspec looks for its files (the default model, the Dawn
// library) only in the home folders (weights/home), never above the working folder. Only tests
// import it.
package hometest

import (
	"os"
	"path/filepath"

	"github.com/wspec/wspec/weights/home"
)

// Set points $WSPEC_HOME at the .wspec folder beside the module's go.mod (found from the
// working folder up: a test's folder is inside the module), where ./setup.sh installs, unless
// $WSPEC_HOME is set already. For a TestMain, before anything opens a device.
func Set() {
	if os.Getenv(home.Env) != "" {
		return
	}
	dir, err := os.Getwd()
	for err == nil {
		if _, e := os.Stat(filepath.Join(dir, "go.mod")); e == nil {
			os.Setenv(home.Env, filepath.Join(dir, ".wspec"))
			return
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return
		}
		dir = parent
	}
}
