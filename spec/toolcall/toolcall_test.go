package toolcall

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec/grammar"
)

var weather = Call{Name: "get_weather", Arguments: `{"city":"Paris","days":2}`}
var add = Call{Name: "add", Arguments: `{"a":1,"b":[2,3]}`}

var parseCases = []struct {
	parser, text, content string
	calls                 []Call
}{
	{"hermes", "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>", "Let me check.\n", []Call{weather}},
	{"hermes", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": [2, 3]}}\n</tool_call>", "", []Call{weather, add}},
	{"hermes", "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": [2, 3]}}", "", []Call{add}}, // left open at the end
	{"hermes", "No tools needed: 1 < 2 and <tool is not a tag.", "No tools needed: 1 < 2 and <tool is not a tag.", nil},
	{"hermes", "<tool_call>{\"name\": broken}</tool_call>", "<tool_call>{\"name\": broken}</tool_call>", nil},
	// Calls without the marker, as Qwen2.5-Coder writes them (llama.cpp reads them too).
	{"hermes", "```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\"city\": \"Paris\", \"days\": 2}\n}\n```", "", []Call{weather}},
	{"hermes", "  {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}", "", []Call{weather}},
	{"hermes", "```\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}, {\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": [2, 3]}}]\n```\n", "", []Call{weather, add}},
	{"hermes", "```json\n{\"name\": \"Bob\", \"age\": 3}\n```", "```json\n{\"name\": \"Bob\", \"age\": 3}\n```", nil},
	{"hermes", "{\"name\": \"add\", \"arguments\": {\"a\": 1}} and more", "{\"name\": \"add\", \"arguments\": {\"a\": 1}} and more", nil},
	{"hermes", "```python\nprint({\"name\": 1})\n```", "```python\nprint({\"name\": 1})\n```", nil},
	{"hermes", "Here: ```json\n{\"name\": \"add\", \"arguments\": {}}\n```", "Here: ```json\n{\"name\": \"add\", \"arguments\": {}}\n```", nil},
	{"llama3_json", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}", "", []Call{weather}},
	{"llama3_json", "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}; {\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": [2, 3]}}", "", []Call{weather, add}},
	{"llama3_json", "  The answer is {not a call}.", "  The answer is {not a call}.", nil},
	{"llama3_json", "{\"answer\": 4", "{\"answer\": 4", nil},
	{"mistral", "Sure.[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}, {\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": [2, 3]}}]", "Sure.", []Call{weather, add}},
	{"mistral", "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": 2}[TOOL_CALLS]add{\"a\": 1, \"b\": [2, 3]}", "", []Call{weather, add}},
	{"mistral", "[TOOL_CALLS] [{\"name\": \"add\", \"arguments\": \"{\\\"a\\\": 1, \\\"b\\\": [2, 3]}\"}]", "", []Call{add}}, // arguments as a string
	{"mistral", "Plain [TOOL text", "Plain [TOOL text", nil},
}

// Each parser reads the calls and the content of a whole reply, and of the same reply streamed
// in pieces cut at every place (two cuts each): the content sent is the same, and each call
// comes once.
func TestParsers(t *testing.T) {
	for _, c := range parseCases {
		content, calls := Parse(c.parser, c.text)
		if content != c.content || !reflect.DeepEqual(calls, c.calls) {
			t.Errorf("%s %q:\n got %q %v\nwant %q %v", c.parser, c.text, content, calls, c.content, c.calls)
			continue
		}
		for i := 0; i <= len(c.text); i++ {
			for _, j := range []int{i, (i + len(c.text)) / 2, len(c.text)} {
				s := NewStream(c.parser)
				var got string
				var gotCalls []Call
				for _, piece := range []string{c.text[:i], c.text[i:j], c.text[j:]} {
					t, cs := s.Push(piece)
					got += t
					gotCalls = append(gotCalls, cs...)
				}
				t2, cs := s.Finish()
				got += t2
				gotCalls = append(gotCalls, cs...)
				if got != c.content || !reflect.DeepEqual(gotCalls, c.calls) {
					t.Fatalf("%s %q cut at %d, %d:\n got %q %v\nwant %q %v", c.parser, c.text, i, j, got, gotCalls, c.content, c.calls)
				}
			}
		}
	}
}

// A hermes call is sent as soon as its block closes.
func TestHermesCallsEarly(t *testing.T) {
	s := NewStream("hermes")
	if text, calls := s.Push("Hi <tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": [2, 3]}}</tool_call>"); text != "Hi " || !reflect.DeepEqual(calls, []Call{add}) {
		t.Fatalf("%q %v", text, calls)
	}
	if text, calls := s.Finish(); text != "" || calls != nil {
		t.Fatalf("finish: %q %v", text, calls)
	}
}

// The schemas that force calls, and the replies written under them read back.
func TestForced(t *testing.T) {
	tools := []Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}}}`)}, {Name: "now"}}
	raw, err := RequiredSchema(tools, false)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		MinItems, MaxItems int
		Items              struct {
			AnyOf []struct {
				Properties struct{ Name, Parameters map[string]any }
			}
		}
	}
	if err := json.Unmarshal(raw, &schema); err != nil || schema.MinItems != 1 || schema.MaxItems != 1 || len(schema.Items.AnyOf) != 2 ||
		schema.Items.AnyOf[1].Properties.Parameters["type"] != "object" {
		t.Fatalf("%s: %v", raw, err)
	}
	if _, err := RequiredSchema(nil, true); err == nil {
		t.Error("no tools: no error")
	}
	calls, err := ParseRequired(`[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "now", "parameters": {}}]`)
	if err != nil || !reflect.DeepEqual(calls, []Call{{"get_weather", `{"city":"Paris"}`}, {"now", "{}"}}) {
		t.Errorf("required: %v %v", calls, err)
	}
	if c, err := ParseNamed("get_weather", ` {"city": "Rome"} `); err != nil || c != (Call{"get_weather", `{"city":"Rome"}`}) {
		t.Errorf("named: %v %v", c, err)
	}
	if _, err := ParseNamed("x", `{"city": `); err == nil {
		t.Error("named: cut JSON read")
	}
}

// A tool whose parameters carry $defs (pydantic's nested models) is forced with its
// definitions at the top of the required schema, where its references point, as vLLM hoists
// them; two tools that define one name differently are an error.
func TestForcedHoistsDefs(t *testing.T) {
	weather := Tool{Name: "get_weather", Parameters: json.RawMessage(`{"$defs": {"Unit": {"enum": ["c", "f"], "type": "string"}},
		"properties": {"city": {"type": "string"}, "unit": {"$ref": "#/$defs/Unit"}}, "required": ["city", "unit"], "type": "object"}`)}
	other := Tool{Name: "convert", Parameters: json.RawMessage(`{"definitions": {"Unit": {"enum": ["k"], "type": "string"}},
		"properties": {"to": {"$ref": "#/definitions/Unit"}}, "type": "object"}`)}
	raw, err := RequiredSchema([]Tool{weather, other, {Name: "now"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.Compile(grammar.Spec{Kind: grammar.JSONSchema, Text: string(raw)}, grammar.NewVocab(256, func(id int) []byte { return []byte{byte(id)} }))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	for text, want := range map[string]bool{
		`[{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}]`: true,
		`[{"name": "get_weather", "parameters": {"city": "Paris", "unit": "k"}}]`: false,
		`[{"name": "convert", "parameters": {"to": "k"}}]`:                        true,
	} {
		m := g.NewMatcher()
		ok := true
		for _, b := range []byte(text) {
			if m.Accept(int(b)) != nil {
				ok = false
				break
			}
		}
		if ok = ok && m.End(); ok != want {
			t.Errorf("%s matched %v", text, ok)
		}
	}
	clash := Tool{Name: "clash", Parameters: json.RawMessage(`{"$defs": {"Unit": {"enum": ["x"]}}, "type": "object"}`)}
	if _, err := RequiredSchema([]Tool{weather, clash}, false); err == nil || !strings.Contains(err.Error(), "$defs/Unit") {
		t.Errorf("two tools defining Unit differently: %v", err)
	}
}

// A reply the hermes parser holds back as maybe calls is only one that opens with an object
// or a json (or plain) fence: a fence of another language, or text, streams as it comes.
func TestHermesHoldsOnlyWhatMayBeCalls(t *testing.T) {
	for text, held := range map[string]bool{
		"```python\nprint(1)\n":     false,
		"Sure, here it is: {":       false,
		"```json\n{\"name\": \"a":   true,
		"\n{\"name\": \"add\", \"a": true,
	} {
		s := NewStream("hermes")
		content, _ := s.Push(text)
		if (content == "") != held {
			t.Errorf("%q: streamed %q before the end", text, content)
		}
	}
}
