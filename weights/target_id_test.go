package weights

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// writeTinyLlama writes a Llama folder of config c with random weights in dtype dt.
func writeTinyLlama(t *testing.T, c *Config, seed int64, dt DType) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteConfig(dir, c); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	var ts []Tensor
	for _, s := range c.ExpectedTensors() {
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		if dt == F16 {
			ts = append(ts, F16Tensor(s.Name, s.Shape, v))
		} else {
			ts = append(ts, F32Tensor(s.Name, s.Shape, v))
		}
	}
	if err := WriteSafeTensors(filepath.Join(dir, SingleFileName), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A drafter records its target's ID; the same target (in F32 or in F16) passes, another
// target of the same sizes is refused with ErrWrongTarget, and a drafter without the field
// is not checked.
func TestTargetID(t *testing.T) {
	c := &Config{Arch: "llama", Dim: 16, HiddenDim: 24, NLayers: 2, NHeads: 2, NKVHeads: 2, HeadDim: 8, Vocab: 300,
		MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true, BOS: 1, EOS: []int{2}}
	target := writeTinyLlama(t, c, 1, F32)
	other := writeTinyLlama(t, c, 2, F32)
	w, err := LoadLlama(target, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := TargetIDOfWeights("tiny", w)
	ck, err := OpenCheckpoint(target)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := TargetIDOf("tiny", c, ck); err != nil || got != id {
		t.Fatalf("TargetIDOf = %v, %v; from the weights %v", got, err, id)
	}
	ck.Close()

	drafter := t.TempDir()
	if err := os.WriteFile(filepath.Join(drafter, ConfigFileName), []byte(`{"medusa_num_heads": 4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckTargetDir(drafter, other); err != nil {
		t.Fatalf("a drafter without %s: %v", TargetIDKey, err)
	}
	if err := WriteTargetID(drafter, id); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTargetID(drafter); err != nil || got == nil || *got != id {
		t.Fatalf("ReadTargetID = %v, %v, want %v", got, err, id)
	}
	if err := CheckTargetDir(drafter, target); err != nil {
		t.Fatalf("its own target: %v", err)
	}
	// The same weights stored in F16 (rounded once, as the fingerprint rounds) pass.
	w16 := writeTinyLlama(t, c, 1, F16)
	if err := CheckTargetDir(drafter, w16); err != nil {
		t.Fatalf("its target in F16: %v", err)
	}
	if err := CheckTargetDir(drafter, other); !errors.Is(err, ErrWrongTarget) {
		t.Fatalf("another target: %v, want ErrWrongTarget", err)
	}
	c2 := *c
	c2.NLayers = 3
	if err := CheckTargetDir(drafter, writeTinyLlama(t, &c2, 1, F32)); !errors.Is(err, ErrWrongTarget) {
		t.Fatalf("a target of other sizes: %v, want ErrWrongTarget", err)
	}
}
