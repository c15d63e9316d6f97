package web

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/grammar"
)

// GenerateRequest is generate()'s options besides the sampling parameters, with vLLM's
// names. The defaults are `wspec generate`'s: greedy, 256 tokens at most, seed 0.
type GenerateRequest struct {
	MaxTokens *int     `json:"max_tokens"`
	Seed      uint64   `json:"seed"`
	Stop      []string `json:"stop"`
	IgnoreEOS bool     `json:"ignore_eos"`
	// Speculative is the server's per-request "speculative": num_speculative_tokens 0 turns
	// speculation off, 1..15 caps the drafts a step; fixed drafts that many every step,
	// paying or not.
	Speculative *struct {
		NumSpeculativeTokens *int `json:"num_speculative_tokens"`
		Fixed                bool `json:"fixed"`
	} `json:"speculative"`
	// StructuredOutputs is vLLM's structured_outputs: one of json (a schema object), regex,
	// choice, grammar (GBNF), json_object.
	StructuredOutputs *grammar.StructuredOutputs `json:"structured_outputs"`
}

// generateOptions reads generate()'s options JSON (unknown names are errors) into the engine's
// options, validated as the engine validates them: GenerateRequest's fields and the sampling
// parameters of engine.SamplingParams (temperature, top_p, ...; each a number or null, at its
// Default when absent).
func generateOptions(s string) (engine.GenerateOptions, error) {
	o := engine.GenerateOptions{MaxTokens: 256, Sampling: engine.DefaultSampling()}
	var all map[string]json.RawMessage
	if err := strictJSON(s, &all); err != nil {
		return o, fmt.Errorf("generate options: %w", err)
	}
	rest := map[string]json.RawMessage{}
	for name, raw := range all {
		p := engine.SamplingParamNamed(name)
		if p == nil {
			rest[name] = raw
			continue
		}
		var v *float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return o, fmt.Errorf("generate options: %s: want a number, got %s", name, raw)
		}
		if v != nil {
			if err := p.Set(&o.Sampling, *v); err != nil {
				return o, err
			}
		}
	}
	var r GenerateRequest
	if err := strictJSON(objectOf(rest), &r); err != nil {
		return o, fmt.Errorf("generate options: %w", err)
	}
	o.Stop, o.IgnoreEOS, o.Seed = r.Stop, r.IgnoreEOS, r.Seed
	if r.MaxTokens != nil {
		o.MaxTokens = *r.MaxTokens
	}
	if sp := r.Speculative; sp != nil {
		o.Speculate(sp.NumSpeculativeTokens, sp.Fixed)
	}
	if r.StructuredOutputs != nil {
		specs, err := r.StructuredOutputs.Specs()
		switch {
		case err != nil:
			return o, fmt.Errorf("structured_outputs: %w", err)
		case len(specs) > 1:
			return o, fmt.Errorf("structured_outputs: give one of json, regex, choice, grammar, json_object")
		case len(specs) == 1:
			o.Structured = &specs[0]
		}
	}
	return o, o.Validate(0)
}

// objectOf writes fields as a JSON object, each value's bytes as they are (a schema's text
// is kept as written).
func objectOf(fields map[string]json.RawMessage) string {
	var b strings.Builder
	b.WriteByte('{')
	for k, v := range fields {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// strictJSON decodes s into v, refusing unknown names and trailing data; "" is {}.
func strictJSON(s string, v any) error {
	if s == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}
