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
	MaxTokens            *int     `json:"max_tokens"`
	Temperature          float32  `json:"temperature"`
	TopP                 *float32 `json:"top_p"`
	TopK                 int      `json:"top_k"`
	MinP                 float32  `json:"min_p"`
	Seed                 uint64   `json:"seed"`
	Stop                 []string `json:"stop"`
	IgnoreEOS            bool     `json:"ignore_eos"`
	PresencePenalty      float32  `json:"presence_penalty"`
	FrequencyPenalty     float32  `json:"frequency_penalty"`
	RepetitionPenalty    *float32 `json:"repetition_penalty"`
	NumSpeculativeTokens int      `json:"num_speculative_tokens"`
	FixedSpeculation     bool     `json:"fixed_speculation"` // draft k every step, paying or not
	NoSpeculation        bool     `json:"no_speculation"`
	// StructuredOutputs is vLLM's structured_outputs: one of json (a schema object), regex,
	// choice, grammar (GBNF), json_object.
	StructuredOutputs *structuredOutputs `json:"structured_outputs"`
}

type structuredOutputs struct {
	JSON       json.RawMessage `json:"json"`
	Regex      *string         `json:"regex"`
	Choice     []string        `json:"choice"`
	Grammar    *string         `json:"grammar"`
	JSONObject bool            `json:"json_object"`
}

// spec is the one structured output given (nil: none).
func (s *structuredOutputs) spec() (*grammar.Spec, error) {
	var got []grammar.Spec
	if len(s.JSON) > 0 && string(s.JSON) != "null" {
		got = append(got, grammar.Spec{Kind: grammar.JSONSchema, Text: string(s.JSON)})
	}
	if s.Regex != nil {
		got = append(got, grammar.Spec{Kind: grammar.Regex, Text: *s.Regex})
	}
	if s.Choice != nil {
		got = append(got, grammar.Spec{Kind: grammar.Choice, Choices: s.Choice})
	}
	if s.Grammar != nil {
		got = append(got, grammar.Spec{Kind: grammar.GBNF, Text: *s.Grammar})
	}
	if s.JSONObject {
		got = append(got, grammar.Spec{Kind: grammar.JSONObject})
	}
	switch len(got) {
	case 0:
		return nil, nil
	case 1:
		return &got[0], nil
	}
	return nil, fmt.Errorf("structured_outputs: give one of json, regex, choice, grammar, json_object")
}

// generateOptions reads generate()'s options JSON (unknown names are errors) into the engine's
// options, validated as the engine validates them.
func generateOptions(s string) (engine.GenerateOptions, error) {
	var r GenerateRequest
	if err := strictJSON(s, &r); err != nil {
		return engine.GenerateOptions{}, fmt.Errorf("generate options: %w", err)
	}
	o := engine.GenerateOptions{MaxTokens: 256, Stop: r.Stop, IgnoreEOS: r.IgnoreEOS,
		NumSpeculativeTokens: r.NumSpeculativeTokens, FixedSpeculation: r.FixedSpeculation, NoSpeculation: r.NoSpeculation,
		Sampling: engine.Sampling{Temperature: r.Temperature, TopP: 1, TopK: r.TopK, MinP: r.MinP, Seed: r.Seed,
			PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty, RepetitionPenalty: 1}}
	if r.MaxTokens != nil {
		o.MaxTokens = *r.MaxTokens
	}
	if r.TopP != nil {
		if o.TopP = *r.TopP; o.TopP == 0 {
			o.TopP = engine.SmallestTopP // as the CLI and the OpenAI API mean it: the likeliest token alone
		}
	}
	if r.RepetitionPenalty != nil {
		o.RepetitionPenalty = *r.RepetitionPenalty
	}
	if r.StructuredOutputs != nil {
		var err error
		if o.Structured, err = r.StructuredOutputs.spec(); err != nil {
			return o, err
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

// result is a generation's result as the page reads it.
func result(r *engine.Result) map[string]any {
	m := r.Metrics
	return map[string]any{
		"text": r.Text, "tokens": r.Tokens, "prompt_tokens": len(r.PromptTokens), "finish_reason": string(r.Finish),
		"prefill_ms": float64(r.Prefill.Microseconds()) / 1000, "decode_ms": float64(r.Decode.Microseconds()) / 1000,
		"steps": m.Steps, "drafting_steps": m.Drafts, "draft_tokens": m.DraftTokens, "accepted_tokens": m.AcceptedTokens,
		"acceptance_rate": m.AcceptanceRate(), "mean_acceptance_length": m.MeanAcceptanceLength(),
		"accepted_per_position": m.AcceptedPerPosition,
	}
}

// describe is what the page shows of an engine: the model, the adapter, the speculation.
func describe(e *engine.Engine) map[string]any {
	i := e.Info()
	return map[string]any{"model": i.Dir, "adapter": i.Adapter, "dtype": i.DType, "dispatches": i.Dispatches,
		"method": i.Method, "k": i.K, "max_model_len": i.Config.MaxSeq, "features": i.Features}
}
