package synth

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights"
)

// A draft model retargeted for a small model's inflation passes the loader's target check
// against the inflated model (the original, stamped for the small model, fails it), keeps
// its weights byte for byte, and an existing output folder is refused untouched.
func TestWriteRetargeted(t *testing.T) {
	tmp := t.TempDir()
	small, big, draft := filepath.Join(tmp, "small"), filepath.Join(tmp, "big"), filepath.Join(tmp, "draft")
	if err := Write(small, tiny(), Options{DType: weights.F32, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	dc := tiny()
	dc.NLayers, dc.Dim, dc.HiddenDim, dc.NHeads, dc.NKVHeads = 1, 32, 48, 2, 1
	if err := Write(draft, dc, Options{DType: weights.F32, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	sw, err := weights.OpenWeights(small)
	if err != nil {
		t.Fatal(err)
	}
	smallID, err := weights.TargetIDOfSource("small", sw.Config, sw.Source)
	sw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := weights.WriteTargetID(draft, smallID); err != nil {
		t.Fatal(err)
	}
	if err := WriteInflated(big, small, Size{Hidden: 96, Heads: 6, Intermediate: 128, Layers: 4}, Options{DType: weights.F16}); err != nil {
		t.Fatal(err)
	}
	if err := weights.CheckTargetDir(draft, big); !errors.Is(err, weights.ErrWrongTarget) {
		t.Fatalf("the small model's draft model against the inflated target: %v, want ErrWrongTarget", err)
	}
	out := filepath.Join(tmp, "retargeted")
	if err := WriteRetargeted(out, draft, big); err != nil {
		t.Fatal(err)
	}
	if err := weights.CheckTargetDir(out, big); err != nil {
		t.Fatalf("retargeted: %v", err)
	}
	if err := weights.CheckTargetDir(out, small); !errors.Is(err, weights.ErrWrongTarget) {
		t.Fatalf("retargeted against the small model: %v, want ErrWrongTarget", err)
	}
	files, err := os.ReadDir(draft)
	if err != nil || len(files) < 2 {
		t.Fatalf("the draft folder: %d files, %v", len(files), err)
	}
	for _, f := range files {
		if f.Name() == weights.ConfigFileName {
			continue
		}
		a, errA := os.ReadFile(filepath.Join(draft, f.Name()))
		b, errB := os.ReadFile(filepath.Join(out, f.Name()))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Fatalf("%s changed (%v, %v; %d and %d bytes)", f.Name(), errA, errB, len(a), len(b))
		}
	}
	if err := WriteRetargeted(out, draft, big); err == nil {
		t.Fatal("a second write into the same folder: no error")
	}
	if err := weights.CheckTargetDir(out, big); err != nil {
		t.Fatalf("after a refused write: %v", err)
	}
}
