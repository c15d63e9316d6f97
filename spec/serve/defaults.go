package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
)

// ReadGenerationConfig reads the sampling defaults of dir/generation_config.json as vLLM
// applies them (--generation-config auto): temperature, top_p, top_k, min_p and
// repetition_penalty where the file sets them. A folder without the file has none; a value
// out of range is an error naming it.
func ReadGenerationConfig(dir string) (SamplingDefaults, error) {
	var d SamplingDefaults
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
	var g struct {
		Temperature       *float64 `json:"temperature"`
		TopP              *float64 `json:"top_p"`
		TopK              *int     `json:"top_k"`
		MinP              *float64 `json:"min_p"`
		RepetitionPenalty *float64 `json:"repetition_penalty"`
		DoSample          *bool    `json:"do_sample"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return d, fmt.Errorf("%s: %w", path, err)
	}
	check := func(name string, v *float64, lo, hi float64) error {
		if v != nil && !(*v >= lo && *v <= hi) {
			return fmt.Errorf("%s: %s %g: want %g..%g", path, name, *v, lo, hi)
		}
		return nil
	}
	for _, c := range []struct {
		name   string
		v      *float64
		lo, hi float64
	}{{"temperature", g.Temperature, 0, 2}, {"top_p", g.TopP, 0, 1}, {"min_p", g.MinP, 0, 1}, {"repetition_penalty", g.RepetitionPenalty, 0.01, 2}} {
		if err := check(c.name, c.v, c.lo, c.hi); err != nil {
			return d, err
		}
	}
	if g.TopK != nil && *g.TopK < -1 {
		return d, fmt.Errorf("%s: top_k %d: want -1 or more", path, *g.TopK)
	}
	d = SamplingDefaults{Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK, MinP: g.MinP, RepetitionPenalty: g.RepetitionPenalty}
	if g.DoSample != nil && !*g.DoSample && d.Temperature != nil {
		zero := 0.0
		d.Temperature = &zero // transformers' do_sample false is greedy
	}
	return d, nil
}

// Set says whether any default is set.
func (d SamplingDefaults) Set() bool {
	return d.Temperature != nil || d.TopP != nil || d.TopK != nil || d.MinP != nil || d.RepetitionPenalty != nil
}

func (d SamplingDefaults) String() string {
	out := ""
	add := func(name string, v any) {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s %v", name, v)
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"temperature", d.Temperature}, {"top_p", d.TopP}, {"min_p", d.MinP}, {"repetition_penalty", d.RepetitionPenalty}} {
		if f.v != nil {
			add(f.name, *f.v)
		}
	}
	if d.TopK != nil {
		add("top_k", *d.TopK)
	}
	return out
}

// apply fills the fields a request left unset.
func (d SamplingDefaults) apply(f *samplingFields) {
	for _, p := range []struct{ dst, def **float64 }{{&f.Temperature, &d.Temperature}, {&f.TopP, &d.TopP}, {&f.MinP, &d.MinP}, {&f.RepetitionPenalty, &d.RepetitionPenalty}} {
		if *p.dst == nil && *p.def != nil {
			*p.dst = *p.def
		}
	}
	if f.TopK == nil && d.TopK != nil {
		f.TopK = d.TopK
	}
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
