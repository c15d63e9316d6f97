package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Tool is a function the client offers: its name and its parameters' JSON Schema (nil for
// none).
type Tool struct {
	Name       string
	Parameters json.RawMessage
}

// noParameters is the schema of a function that takes none.
var noParameters = json.RawMessage(`{"type": "object", "properties": {}}`)

func (t Tool) parameters() json.RawMessage {
	if len(bytes.TrimSpace(t.Parameters)) == 0 || string(t.Parameters) == "null" {
		return noParameters
	}
	return t.Parameters
}

// RequiredSchema is the JSON Schema a reply to tool_choice "required" is written under, as
// vLLM forces it: a list of at least one (at most one unless parallel) {"name": one of the
// tools, "parameters": that tool's arguments}.
func RequiredSchema(tools []Tool, parallel bool) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, fmt.Errorf("no tools to choose from")
	}
	var anyOf []any
	// each tool's $defs (and definitions) move to the top, where its "#/$defs/..." references
	// point once its parameters sit inside the list, as vLLM hoists them
	defs := map[string]map[string]json.RawMessage{"$defs": {}, "definitions": {}}
	owner := map[string]string{}
	for _, t := range tools {
		params, err := hoistDefs(t, defs, owner)
		if err != nil {
			return nil, err
		}
		anyOf = append(anyOf, map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":       map[string]any{"type": "string", "enum": []string{t.Name}},
				"parameters": params,
			},
			"required":             []string{"name", "parameters"},
			"additionalProperties": false,
		})
	}
	schema := map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"anyOf": anyOf}}
	if !parallel {
		schema["maxItems"] = 1
	}
	for key, d := range defs {
		if len(d) > 0 {
			schema[key] = d
		}
	}
	return json.Marshal(schema)
}

// hoistDefs takes a tool's $defs and definitions out of its parameters into defs; two tools
// that define one name differently are an error.
func hoistDefs(t Tool, defs map[string]map[string]json.RawMessage, owner map[string]string) (json.RawMessage, error) {
	raw := t.parameters()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return raw, nil // not an object: the schema compiler says what is wrong
	}
	moved := false
	for key := range defs {
		d, ok := obj[key]
		if !ok {
			continue
		}
		var named map[string]json.RawMessage
		if err := json.Unmarshal(d, &named); err != nil {
			return nil, fmt.Errorf("tool %q: parameters' %s is not an object", t.Name, key)
		}
		for name, def := range named {
			if prev, ok := defs[key][name]; ok && !bytes.Equal(compact(prev), compact(def)) {
				return nil, fmt.Errorf("tools %q and %q both define %s/%s, differently (tool_choice \"required\" puts every tool's definitions in one schema)", owner[key+"/"+name], t.Name, key, name)
			}
			defs[key][name], owner[key+"/"+name] = def, t.Name
		}
		delete(obj, key)
		moved = true
	}
	if !moved {
		return raw, nil
	}
	return json.Marshal(obj)
}

func compact(b json.RawMessage) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// NamedSchema is the JSON Schema a reply to a named tool_choice is written under: the tool's
// arguments.
func NamedSchema(t Tool) json.RawMessage { return t.parameters() }

// ParseRequired reads a reply written under RequiredSchema into calls.
func ParseRequired(text string) ([]Call, error) {
	var list []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return nil, err
	}
	out := make([]Call, len(list))
	for i, c := range list {
		out[i] = Call{Name: c.Name, Arguments: argumentsText(c.Parameters)}
	}
	return out, nil
}

// ParseNamed reads a reply written under NamedSchema into the call of tool name.
func ParseNamed(name, text string) (Call, error) {
	if !json.Valid([]byte(text)) {
		return Call{}, fmt.Errorf("the arguments are not JSON")
	}
	return Call{Name: name, Arguments: argumentsText(json.RawMessage(text))}, nil
}
