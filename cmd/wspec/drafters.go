package main

import (
	"os"
	"path/filepath"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// DraftersDir is where the repository keeps the drafters trained for its default model
// (spec/distill/recipe.sh makes them), one folder per speculative mode.
var draftersDir = filepath.Join("spec", "drafters", spec.DefaultModel)

// defaultDrafter is the repository's drafter folder for mode (draft_model, medusa, eagle,
// eagle3), found walking up from the working directory and from the executable's, or ""
// when there is none (or the mode needs no checkpoint).
func defaultDrafter(mode string) string {
	switch mode {
	case "draft_model", "medusa", "eagle", "eagle3":
	default:
		return ""
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, draftersDir, mode)
			if _, err := os.Stat(filepath.Join(p, weights.ConfigFileName)); err == nil {
				return p
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return ""
}

// checkDrafterTarget refuses a drafter trained for another target than the model in
// targetDir (drafters whose config names no target pass).
func checkDrafterTarget(sc *spec.Config, targetDir string) error {
	if sc == nil || sc.Model == "" {
		return nil
	}
	return weights.CheckTargetDir(sc.Model, targetDir)
}
