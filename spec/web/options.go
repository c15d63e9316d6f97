package web

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/grammar"
)

// GenerateRequest is generate()'s options, with the names of vLLM's sampling parameters. The
// defaults are `wspec generate`'s: greedy, 256 tokens at most, seed 0.
type GenerateRequest struct {
	MaxTokens         *int     `json:"max_tokens"`
	Temperature       float32  `json:"temperature"`
	TopP              *float32 `json:"top_p"`
	TopK              int      `json:"top_k"`
	MinP              float32  `json:"min_p"`
	Seed              uint64   `json:"seed"`
	Stop              []string `json:"stop"`
	IgnoreEOS         bool     `json:"ignore_eos"`
	PresencePenalty   float32  `json:"presence_penalty"`
	FrequencyPenalty  float32  `json:"frequency_penalty"`
	RepetitionPenalty *float32 `json:"repetition_penalty"`
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
// options, validated as the engine validates them.
func generateOptions(s string) (engine.GenerateOptions, error) {
	var r GenerateRequest
	if err := strictJSON(s, &r); err != nil {
		return engine.GenerateOptions{}, fmt.Errorf("generate options: %w", err)
	}
	o := engine.GenerateOptions{MaxTokens: 256, Stop: r.Stop, IgnoreEOS: r.IgnoreEOS,
		Sampling: engine.Sampling{Temperature: r.Temperature, TopP: 1, TopK: r.TopK, MinP: r.MinP, Seed: r.Seed,
			PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty, RepetitionPenalty: 1}}
	if r.MaxTokens != nil {
		o.MaxTokens = *r.MaxTokens
	}
	if r.TopP != nil {
		o.TopP = engine.APITopP(*r.TopP)
	}
	if sp := r.Speculative; sp != nil {
		o.Speculate(sp.NumSpeculativeTokens, sp.Fixed)
	}
	if r.RepetitionPenalty != nil {
		o.RepetitionPenalty = *r.RepetitionPenalty
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
