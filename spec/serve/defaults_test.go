package serve

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec/engine"
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
	write(`{"bos_token_id": 1, "temperature": 0.6, "top_p": 0.95, "top_k": 20, "repetition_penalty": 1.05, "presence_penalty": 1}`)
	d, err := ReadGenerationConfig(dir)
	if err != nil || !d.Set() || d.String() != "temperature 0.6, top_p 0.95, top_k 20, repetition_penalty 1.05" {
		t.Fatalf("%q %v", d, err)
	}
	s := &Server{cfg: Config{Defaults: d}}
	got, err := s.sampling(samplingParams{"temperature": 1})
	want := engine.Sampling{Temperature: 1, TopP: 0.95, TopK: 20, RepetitionPenalty: 1.05}
	if err != nil || math.Abs(float64(got.TopP-want.TopP)) > 1e-7 || math.Abs(float64(got.RepetitionPenalty-want.RepetitionPenalty)) > 1e-7 {
		t.Fatalf("applied: %+v %v", got, err)
	}
	got.TopP, got.RepetitionPenalty = want.TopP, want.RepetitionPenalty
	if !reflect.DeepEqual(got, want) {
		t.Errorf("applied: %+v, want %+v (the request's temperature, the file's top_p, top_k and repetition_penalty; presence_penalty is not a generation config's)", got, want)
	}
	write(`{"temperature": 0.7, "do_sample": false}`)
	if d, err := ReadGenerationConfig(dir); err != nil || d["temperature"] != 0 {
		t.Errorf("do_sample false: %v %v", d, err)
	}
	write(`{"top_k": 20.5}`)
	if _, err := ReadGenerationConfig(dir); err == nil || !strings.Contains(err.Error(), "top_k") {
		t.Errorf("top_k 20.5: %v", err)
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
