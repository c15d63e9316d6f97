package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// StructuredOutputs is vLLM's structured_outputs request field, as the server and the web
// page's generate() read it: one of json (a schema, as an object or a string holding one),
// regex, choice, grammar (GBNF) or json_object.
type StructuredOutputs struct {
	JSON       json.RawMessage `json:"json"`
	Regex      *string         `json:"regex"`
	Choice     []string        `json:"choice"`
	Grammar    *string         `json:"grammar"`
	JSONObject *bool           `json:"json_object"`
	// vLLM's knobs of its backends: accepted and ignored (structural_tag is refused).
	DisableFallback        json.RawMessage `json:"disable_fallback"`
	DisableAnyWhitespace   json.RawMessage `json:"disable_any_whitespace"`
	DisableAdditionalProps json.RawMessage `json:"disable_additional_properties"`
	WhitespacePattern      json.RawMessage `json:"whitespace_pattern"`
	StructuralTag          json.RawMessage `json:"structural_tag"`
}

// Specs lists the structured outputs s names (a caller refuses more than one).
func (s *StructuredOutputs) Specs() ([]Spec, error) {
	if given(s.StructuralTag) {
		return nil, fmt.Errorf("%w: structural_tag", ErrUnsupported)
	}
	var out []Spec
	if given(s.JSON) {
		text, err := SchemaText(s.JSON)
		if err != nil {
			return nil, err
		}
		out = append(out, Spec{Kind: JSONSchema, Text: text})
	}
	if s.Regex != nil {
		out = append(out, Spec{Kind: Regex, Text: *s.Regex})
	}
	if s.Choice != nil {
		out = append(out, Spec{Kind: Choice, Choices: s.Choice})
	}
	if s.Grammar != nil {
		out = append(out, Spec{Kind: GBNF, Text: *s.Grammar})
	}
	if s.JSONObject != nil && *s.JSONObject {
		out = append(out, Spec{Kind: JSONObject})
	}
	return out, nil
}

// SchemaText is a JSON schema sent as an object, or as a JSON string holding one (as vLLM
// takes both).
func SchemaText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return string(raw), nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return "", fmt.Errorf("%w: a JSON schema that is neither an object nor a string", ErrInvalid)
	}
	return text, nil
}

func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
