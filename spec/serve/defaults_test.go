package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// generation_config.json's sampling values become the defaults of requests that set none (a
// request's own value wins); do_sample false is greedy; a value out of range is refused
// naming it; a folder without the file, or a GGUF file, has none.
func TestGenerationConfigDefaults(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := ReadGenerationConfig(dir); err != nil || d.Set() {
		t.Fatalf("no file: %+v %v", d, err)
	}
	write(`{"bos_token_id": 1, "temperature": 0.6, "top_p": 0.95, "top_k": 20, "repetition_penalty": 1.05}`)
	d, err := ReadGenerationConfig(dir)
	if err != nil || !d.Set() || d.String() != "temperature 0.6, top_p 0.95, repetition_penalty 1.05, top_k 20" {
		t.Fatalf("%q %v", d, err)
	}
	var f samplingFields
	own := 1.0
	f.Temperature = &own
	d.apply(&f)
	if *f.Temperature != 1 || *f.TopP != 0.95 || *f.TopK != 20 || f.MinP != nil || *f.RepetitionPenalty != 1.05 {
		t.Errorf("applied: %+v", f)
	}
	write(`{"temperature": 0.7, "do_sample": false}`)
	if d, err := ReadGenerationConfig(dir); err != nil || *d.Temperature != 0 {
		t.Errorf("do_sample false: %v %v", d, err)
	}
	write(`{"top_p": 1.5}`)
	if _, err := ReadGenerationConfig(dir); err == nil || !strings.Contains(err.Error(), "top_p 1.5") {
		t.Errorf("top_p 1.5: %v", err)
	}
	write(`{"temperature": "hot"}`)
	if _, err := ReadGenerationConfig(dir); err == nil {
		t.Error("a string temperature was read")
	}
	gguf := filepath.Join(dir, "model.gguf")
	os.WriteFile(gguf, []byte("GGUF"), 0o644)
	if d, err := ReadGenerationConfig(gguf); err != nil || d.Set() {
		t.Errorf("a GGUF file: %+v %v", d, err)
	}
}

// With a seed, the seeds of unseeded requests come in a fixed order.
func TestSeeder(t *testing.T) {
	seed := uint64(0)
	a, b := newSeeder(&seed), newSeeder(&seed)
	for range 3 {
		if x, y := a.next(), b.next(); x != y {
			t.Fatalf("%d != %d", x, y)
		}
	}
	//lint:ignore SA4000 each call of next draws anew
	if r := newSeeder(nil); r.next() == r.next() {
		t.Error("random seeds repeat")
	}
}
