package drafters

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/wspec/wspec/weights/home"
)

// Dir returns the folder of mode's drafter in a page: the page mounts the shipped drafters'
// files (fetched next to the model, see spec/web) under <home>/drafters/stories15M/<mode>, as
// the native build writes them there; the wasm binary embeds none. "" for a mode without a
// shipped drafter.
func Dir(mode string) (string, error) {
	mode, ok := shipped(mode)
	if !ok {
		return "", nil
	}
	dir := filepath.Join(home.Default(), "drafters", Model, mode)
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return "", fmt.Errorf("drafters: the %s drafter is not loaded in this page (load it with the model: its files under %s)", mode, dir)
	}
	return dir, nil
}
