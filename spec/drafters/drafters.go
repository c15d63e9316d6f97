// Package drafters is the drafters trained for the default model (stories15M) by
// spec/distill/recipe.sh, one folder per speculative mode, embedded in the binary so that
// `--speculative-mode MODE` finds them wherever wspec runs. Dir writes a mode's checkpoint,
// once, into the wspec home (weights/home) and returns that folder, which the loaders read.
package drafters

import (
	"slices"
	"strings"
)

// Model is the model the drafters were trained for.
const Model = "stories15M"

// Modes lists the modes with a shipped drafter, sorted (the native build's test checks the
// embedded folders against it).
func Modes() []string { return []string{"draft_model", "eagle", "eagle3", "medusa"} }

// shipped normalises mode and says whether a drafter is shipped for it.
func shipped(mode string) (string, bool) {
	mode = strings.ToLower(strings.TrimSpace(mode))
	return mode, slices.Contains(Modes(), mode)
}
