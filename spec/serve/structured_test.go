package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// personSchema is what the OpenAI SDKs' parse() helpers send for a zod or pydantic model: an
// object with a string, an integer, a boolean and an array of at most 3 strings.
const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"},
"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["name","age","ok","tags"],"additionalProperties":false}`

func compileSchema(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validates(s *jsonschema.Schema, text string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return s.Validate(v)
}

// Structured outputs over the wire, with speculation on (ngram, k 4): a JSON schema (n 4 at
// temperature 1, whole and streamed), json_object, a choice, a regular expression and a
// GBNF grammar, through response_format, structured_outputs and the guided_* aliases. Every
// output that ends by itself matches; the story model's free strings can run to max_tokens,
// and such an output ends with finish_reason length (cut by the limit; the mask never cuts).
func TestStructuredOutputs(t *testing.T) {
	f := specServer(t)
	s := compileSchema(t, personSchema)
	body := fmt.Sprintf(`{"messages": [{"role": "user", "content": "Tell me about a cat."}], "n": 3, "temperature": 1, "seed": 11,
		"max_completion_tokens": 200, "response_format": {"type": "json_schema", "json_schema": {"name": "person", "strict": true, "schema": %s}}}`, personSchema)
	code, b := f.post(t, "/v1/chat/completions", body)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var reply chatReply
	if err := json.Unmarshal(b, &reply); err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for _, c := range reply.Choices {
		if c.FinishReason == "length" {
			continue
		}
		stopped++
		if err := validates(s, *c.Message.Content); err != nil || c.FinishReason != "stop" {
			t.Errorf("choice %d (%s): %q: %v", c.Index, c.FinishReason, *c.Message.Content, err)
		}
	}
	if stopped == 0 || reply.Usage.CompletionTokens > 3*200 {
		t.Errorf("no choice ended by itself (usage %+v)", reply.Usage)
	}
	t.Logf("%q", *reply.Choices[0].Message.Content)
	events, done := f.stream(t, context.Background(), "/v1/chat/completions", strings.Replace(body, `"n": 3`, `"n": 1, "stream": true`, 1))
	var text strings.Builder
	for _, e := range events {
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(e), &ch) == nil && len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := validates(s, text.String()); (err != nil && !strings.Contains(events[len(events)-1], `"length"`)) || !done {
		t.Errorf("streamed: %q (done %v): %v", text.String(), done, err)
	}

	completion := func(extra string, maxTokens int) []string {
		t.Helper()
		code, b := f.post(t, "/v1/completions", fmt.Sprintf(`{"prompt": "Once upon a time", "max_tokens": %d, "temperature": 1, "seed": 3, "n": 3, %s}`, maxTokens, extra))
		if code != 200 {
			t.Fatalf("%s: %d %s", extra, code, b)
		}
		var r completionReply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, c := range r.Choices {
			if c.FinishReason != nil && *c.FinishReason == "length" {
				continue
			}
			if c.FinishReason == nil || *c.FinishReason != "stop" {
				t.Errorf("%s: choice %d did not stop: %q", extra, c.Index, c.Text)
			}
			texts = append(texts, c.Text)
		}
		if len(texts) == 0 {
			t.Errorf("%s: no choice ended by itself", extra)
		}
		return texts
	}
	for _, txt := range completion(`"response_format": {"type": "json_object"}`, 200) {
		var v map[string]any
		if err := json.Unmarshal([]byte(txt), &v); err != nil {
			t.Errorf("json_object: %q: %v", txt, err)
		}
	}
	// json_object with a schema (instructor's JSON_SCHEMA mode, several hosted providers): the
	// schema is applied
	for _, txt := range completion(`"response_format": {"type": "json_object", "schema": `+personSchema+`}`, 200) {
		if err := validates(s, txt); err != nil {
			t.Errorf("json_object with a schema: %q: %v", txt, err)
		}
	}
	choices := []string{"happy", "sad", "a little angry"}
	for _, key := range []string{`"structured_outputs": {"choice": %s}`, `"guided_choice": %s`} {
		cj, _ := json.Marshal(choices)
		for _, txt := range completion(fmt.Sprintf(key, cj), 30) {
			if !slices.Contains(choices, txt) {
				t.Errorf("%s: %q is not one of %q", key, txt, choices)
			}
		}
	}
	re := `[A-Z][a-z]{2,8} (is|was) [0-9]{1,2}`
	full := regexp.MustCompile(`^(?:` + re + `)$`)
	for _, txt := range completion(`"guided_regex": `+mustJSON(t, re), 30) {
		if !full.MatchString(txt) {
			t.Errorf("regex %s: %q", re, txt)
		}
	}
	gbnf := `root ::= "The " animal " says " sound "."
animal ::= "cat" | "dog" | "bird"
sound ::= [a-z]{2,6}`
	for _, txt := range completion(`"structured_outputs": {"grammar": `+mustJSON(t, gbnf)+`}`, 30) {
		if !regexp.MustCompile(`^The (cat|dog|bird) says [a-z]{2,6}\.$`).MatchString(txt) {
			t.Errorf("grammar: %q", txt)
		}
	}
	for _, txt := range completion(`"guided_json": `+mustJSON(t, `{"type":"array","items":{"enum":[1,2,3]},"minItems":2,"maxItems":4}`), 60) {
		var v []int
		if err := json.Unmarshal([]byte(txt), &v); err != nil || len(v) < 2 || len(v) > 4 {
			t.Errorf("guided_json array: %q: %v", txt, err)
		}
	}
	f.waitIdle(t)
}

// A grammar too ambiguous to follow (each "x" may open either alternative, so the parses
// double with each one) fails as the client's error naming the field, whole and streamed,
// not as a 500 that OpenAI's SDKs would send again.
func TestAmbiguousGrammarIsTheClientsError(t *testing.T) {
	f := specServer(t)
	x, ok := f.e.Tokenizer().TokenID("x")
	if !ok {
		t.Fatal("no token x")
	}
	body := fmt.Sprintf(`{"prompt": "Once", "max_tokens": 60, "guided_grammar": "root ::= s\ns ::= \"x\" s \"a\" | \"x\" \"x\" s \"b\" | \"x\"", "logit_bias": {"%d": 100}}`, x)
	code, b := f.post(t, "/v1/completions", body)
	var e errorBody
	if code != 400 || json.Unmarshal(b, &e) != nil || e.Error.Param == nil || *e.Error.Param != "guided_grammar" || !strings.Contains(e.Error.Message, "ambiguous") {
		t.Fatalf("%d %s", code, b)
	}
	events, _ := f.stream(t, context.Background(), "/v1/completions", strings.Replace(body, `{"prompt"`, `{"stream": true, "prompt"`, 1))
	if last := events[len(events)-1]; !strings.Contains(last, "ambiguous") || !strings.Contains(last, "invalid_request_error") {
		t.Fatalf("streamed: %s", last)
	}
}
