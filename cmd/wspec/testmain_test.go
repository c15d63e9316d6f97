package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/runtime/devtest"
)

// TestMain points the wspec home at the repository's .wspec (devtest.SetHome), and removes the
// binary wspecBinary built.
func TestMain(m *testing.M) {
	devtest.SetHome()
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
