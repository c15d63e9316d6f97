package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/home"
)

// `wspec distill train` refuses out-of-range flags before it reads a model or data.
func TestDistillTrainFlags(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--train-vocab=-5", "--train-vocab -5"},
		{"--noise=-1", "--noise -1"},
		{"--noise=NaN", "--noise NaN"},
		{"--depth1-epochs=-2", "--depth1-epochs -2"},
		{"--weight-decay=+Inf", "--weight-decay +Inf"},
	} {
		err := runDistillTrain([]string{"--data", "nope", "--out", t.TempDir() + "/x", tc.flag})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.flag, err, tc.want)
		}
	}
}

// `wspec distill eval` refuses out-of-range flags before it reads a model.
func TestDistillEvalFlags(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--max-new=0", "--max-new 0"}, {"--max-new=-3", "--max-new -3"},
		{"--k-max=0", "--k-max 0"}, {"--k-max=99", "--k-max 99"},
	} {
		if err := runDistillEval([]string{"--dir", t.TempDir(), tc.flag}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.flag, err, tc.want)
		}
	}
}

// `distill train` refuses an --out folder holding a model before it reads the data (so before
// minutes of training), and says --force replaces it; `distill gen` refuses an existing
// dataset file before it loads the model; `convert --force` refuses a folder holding files
// that are not a model's, leaving it as it was.
func TestDistillAndConvertRefuseOutputsFirst(t *testing.T) {
	model := t.TempDir()
	os.WriteFile(filepath.Join(model, "config.json"), []byte(`{"model_type": "llama"}`), 0o644)
	err := runDistillTrain([]string{"--data", "no-such-dataset", "--out", model})
	if !errors.Is(err, weights.ErrFolderExists) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("distill train onto a model folder: %v", err)
	}
	data := filepath.Join(t.TempDir(), "d.safetensors")
	os.WriteFile(data, []byte("old"), 0o644)
	if err := runDistillGen([]string{"--model", "no-such-model", "--out", data}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("distill gen onto a dataset: %v", err)
	}
	if err := runDistillGen([]string{"--model", "no-such-model", "--out", filepath.Join(t.TempDir(), "nowhere", "d.safetensors")}); err == nil || !strings.Contains(err.Error(), "folder does not exist") {
		t.Errorf("distill gen into a missing folder: %v", err)
	}
	if b, _ := os.ReadFile(data); string(b) != "old" {
		t.Error("the dataset changed")
	}
	// A place that cannot be written is refused first too (once, only after the work).
	if err := runDistillGen([]string{"--model", "no-such-model", "--out", "/proc/x"}); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		t.Errorf("distill gen into /proc: %v", err)
	}
	if err := runDistillTrain([]string{"--data", "no-such-dataset", "--out", "/proc/x"}); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		t.Errorf("distill train into /proc: %v", err)
	}
	os.WriteFile(filepath.Join(model, "notes.txt"), []byte("mine"), 0o644)
	raw := filepath.Join(home.Default(), "models", "stories15M-llama2c")
	err = runConvert([]string{"--from", "llama2c", filepath.Join(raw, "model.bin"), filepath.Join(raw, "tokenizer.bin"), "--out", model, "--force"})
	if !errors.Is(err, weights.ErrFolderExists) || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("convert --force onto a folder with notes.txt: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(model, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("notes.txt: %q %v", b, err)
	}
}
