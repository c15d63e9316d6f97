package engine

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Every declared parameter: its defaults are in range, a value set is read back, a value out
// of range is the engine's InvalidError naming it, an integer parameter refuses a fraction,
// and its flag is its name with dashes.
func TestSamplingParams(t *testing.T) {
	names := map[string]bool{}
	for i := range SamplingParams {
		p := &SamplingParams[i]
		if names[p.Name] || p.Help == "" || p.Want == "" {
			t.Errorf("%s: declared twice, or without help", p.Name)
		}
		names[p.Name] = true
		for _, d := range []float64{p.Default, p.ServerDefault} {
			if err := p.Check(d, 0); err != nil {
				t.Errorf("%s: default %v out of range: %v", p.Name, d, err)
			}
		}
		s := DefaultSampling()
		v := p.Example
		if v == p.Default || v == p.ServerDefault || p.Check(v, 0) != nil {
			t.Errorf("%s: example %v is a default or out of range", p.Name, v)
		}
		if err := p.Set(&s, v); err != nil || p.get(&s) != float64(float32(v)) {
			t.Errorf("%s: set %v, read %v (%v)", p.Name, v, p.get(&s), err)
		}
		o := GenerateOptions{Sampling: s}
		if err := o.Validate(0); err != nil {
			t.Errorf("%s %v: %v", p.Name, v, err)
		}
		bad := math.Inf(1) // past every float's range; past a vocabulary of 100 for top_k
		if p.Int {
			bad = 1e9
		}
		p.set(&o.Sampling, bad)
		var inv *InvalidError
		if err := o.Validate(100); !errors.As(err, &inv) || inv.Param != p.Name {
			t.Errorf("%s %v: %v, want an InvalidError naming it", p.Name, bad, err)
		}
		if err := p.Set(&s, 0.5); p.Int && err == nil {
			t.Errorf("%s: 0.5 set an integer parameter", p.Name)
		}
		if p.FlagName() != strings.ReplaceAll(p.Name, "_", "-") {
			t.Errorf("%s: flag %s", p.Name, p.FlagName())
		}
	}
	if SamplingParamNamed("min_p") == nil || SamplingParamNamed("seed") != nil {
		t.Error("SamplingParamNamed")
	}
}
