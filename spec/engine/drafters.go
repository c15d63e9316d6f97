package engine

import (
	"path/filepath"
	"strings"

	"github.com/wspec/wspec/spec"
)

// DraftersDir is where the repository keeps the drafters trained for its default model (by
// spec/distill/recipe.sh), one folder per speculative mode.
var DraftersDir = filepath.Join("spec", "drafters", DefaultModel)

// DefaultDrafter is the repository's drafter folder for mode (draft_model, medusa, eagle,
// eagle3), found walking up from the working directory and from the executable's, or ""
// when there is none or the mode needs no checkpoint. Those drafters were trained for the
// default model; Load refuses them against another target.
func DefaultDrafter(mode string) string {
	switch m := strings.ToLower(strings.TrimSpace(mode)); m {
	case "draft_model", "medusa", "eagle", "eagle3":
		if p, ok := findUp(filepath.Join(DraftersDir, m), "config.json"); ok {
			return p
		}
	}
	return ""
}

// WithDefaultDrafter returns c with the repository's drafter for its mode when c names no
// checkpoint (c itself is not changed).
func WithDefaultDrafter(c spec.Config) spec.Config {
	if c.Model == "" {
		c.Model = DefaultDrafter(c.Mode)
	}
	return c
}
