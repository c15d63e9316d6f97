package serve

import (
	"encoding/json"

	"github.com/wspec/wspec/spec/grammar"
)

// structured reads a request's structured output: OpenAI's response_format (json_object;
// json_schema, strict or not: the output always follows the schema), vLLM's
// structured_outputs (json, regex, choice, grammar, json_object) and its guided_* aliases.
// It returns nil for free text, and the field the spec came from (for errors). Two of them
// at once are an error. Whether the spec compiles is the engine's to say.
func structured(f *samplingFields) (*grammar.Spec, string, error) {
	type found struct {
		param string
		spec  grammar.Spec
	}
	var got []found
	schema := func(param string, raw json.RawMessage) error {
		text, err := grammar.SchemaText(raw)
		if err != nil {
			return invalid(param, codeInvalidValue, "%s: %v", param, err)
		}
		got = append(got, found{param, grammar.Spec{Kind: grammar.JSONSchema, Text: text}})
		return nil
	}
	if rf := f.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text", "":
		case "json_object":
			if len(rf.Schema) > 0 && string(rf.Schema) != "null" {
				if err := schema("response_format", rf.Schema); err != nil {
					return nil, "", err
				}
				break
			}
			got = append(got, found{"response_format", grammar.Spec{Kind: grammar.JSONObject}})
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 || string(rf.JSONSchema.Schema) == "null" {
				return nil, "", invalid("response_format", codeMissing, "response_format: json_schema needs json_schema.schema")
			}
			if err := schema("response_format", rf.JSONSchema.Schema); err != nil {
				return nil, "", err
			}
		default:
			return nil, "", invalid("response_format", codeUnsupported, "response_format %q: want text, json_object or json_schema", rf.Type)
		}
	}
	if so := f.StructuredOutputs; so != nil {
		specs, err := so.Specs()
		if err != nil {
			return nil, "", invalid("structured_outputs", codeUnsupported, "structured_outputs: %v", err)
		}
		for _, sp := range specs {
			got = append(got, found{"structured_outputs", sp})
		}
	}
	if len(f.GuidedJSON) > 0 && string(f.GuidedJSON) != "null" {
		if err := schema("guided_json", f.GuidedJSON); err != nil {
			return nil, "", err
		}
	}
	if f.GuidedRegex != nil {
		got = append(got, found{"guided_regex", grammar.Spec{Kind: grammar.Regex, Text: *f.GuidedRegex}})
	}
	if f.GuidedChoice != nil {
		got = append(got, found{"guided_choice", grammar.Spec{Kind: grammar.Choice, Choices: f.GuidedChoice}})
	}
	if f.GuidedGrammar != nil {
		got = append(got, found{"guided_grammar", grammar.Spec{Kind: grammar.GBNF, Text: *f.GuidedGrammar}})
	}
	switch len(got) {
	case 0:
		return nil, "", nil
	case 1:
		return &got[0].spec, got[0].param, nil
	}
	return nil, "", invalid(got[1].param, codeInvalidValue, "%s: only one structured output per request (%s sets one already)", got[1].param, got[0].param)
}
