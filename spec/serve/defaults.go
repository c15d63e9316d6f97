package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/wspec/wspec/spec/engine"
)

// ReadGenerationConfig reads the sampling defaults of dir/generation_config.json as vLLM
// applies them (--generation-config auto): each of engine.SamplingParams that may come from it
// (temperature, top_p, top_k, min_p, repetition_penalty) where the file sets it. A folder
// without the file has none; a value out of range is an error naming it.
func ReadGenerationConfig(dir string) (SamplingDefaults, error) {
	d := SamplingDefaults{}
	path := filepath.Join(dir, "generation_config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
		return d, nil
	}
	if err != nil {
		if st, e := os.Stat(dir); e == nil && !st.IsDir() {
			return d, nil // a GGUF file: no generation_config.json
		}
		return d, err
	}
	var g map[string]json.RawMessage
	if err := json.Unmarshal(b, &g); err != nil {
		return d, fmt.Errorf("%s: %w", path, err)
	}
	for i := range engine.SamplingParams {
		p := &engine.SamplingParams[i]
		raw, ok := g[p.Name]
		if !p.GenerationConfig || !ok || string(raw) == "null" {
			continue
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return d, fmt.Errorf("%s: %s: want a number, got %s", path, p.Name, raw)
		}
		var scratch engine.Sampling // Set refuses a fraction for an integer
		if err := p.Set(&scratch, v); err != nil {
			return d, fmt.Errorf("%s: %w", path, err)
		}
		if err := p.Check(v, 0); err != nil {
			return d, fmt.Errorf("%s: %w", path, err)
		}
		d[p.Name] = v
	}
	var doSample bool
	if raw, ok := g["do_sample"]; ok && json.Unmarshal(raw, &doSample) == nil && !doSample {
		if _, ok := d["temperature"]; ok {
			d["temperature"] = 0 // transformers' do_sample false is greedy
		}
	}
	return d, nil
}

// Set says whether any default is set.
func (d SamplingDefaults) Set() bool { return len(d) > 0 }

// String lists the defaults in engine.SamplingParams' order: "temperature 0.6, top_k 20".
func (d SamplingDefaults) String() string {
	var out []string
	for _, p := range engine.SamplingParams {
		if v, ok := d[p.Name]; ok {
			out = append(out, fmt.Sprintf("%s %v", p.Name, v))
		}
	}
	return strings.Join(out, ", ")
}

// seeder draws the seeds of unseeded requests: random, or from Config.Seed in order
// (vLLM's --seed: the same requests in the same order get the same outputs).
type seeder struct {
	mu  sync.Mutex
	rng *rand.Rand // nil: random
}

func newSeeder(seed *uint64) *seeder {
	if seed == nil {
		return &seeder{}
	}
	return &seeder{rng: rand.New(rand.NewPCG(*seed, 0x9e3779b97f4a7c15))}
}

func (s *seeder) next() uint64 {
	if s.rng == nil {
		return rand64()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Uint64()
}
