package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validator compiles schema for checking outputs with santhosh-tekuri/jsonschema (draft
// 2020-12, formats asserted).
func validator(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ValidOutput reports why text is not a JSON document schema validates (nil: it is).
func validOutput(s *jsonschema.Schema, text string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return s.Validate(v)
}

// Every schema of the suite compiles, and random walks through its masks (each token drawn
// uniformly among those allowed, the output ended as soon as it may) give documents the
// schema validates.
func TestSchemaSuite(t *testing.T) {
	raw, err := os.ReadFile("testdata/schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	var schemas []json.RawMessage
	if err := json.Unmarshal(raw, &schemas); err != nil {
		t.Fatal(err)
	}
	if len(schemas) < 100 {
		t.Fatalf("%d schemas in the suite", len(schemas))
	}
	v := testVocab()
	ended := 0
	for i, s := range schemas {
		g, err := Compile(Spec{Kind: JSONSchema, Text: string(s)}, v)
		if err != nil {
			t.Errorf("schema %d %s: %v", i, s, err)
			continue
		}
		val := validator(t, s)
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		for k := range 10 {
			text, done := walk(t, g, rng, 3000, 1, k == 0)
			if !done {
				continue
			}
			ended++
			if err := validOutput(val, text); err != nil {
				t.Errorf("schema %d %s: output %q: %v", i, s, text, err)
			}
		}
	}
	if ended < 9*len(schemas) {
		t.Errorf("only %d of %d walks ended within 3000 tokens", ended, 10*len(schemas))
	}
}

// Schemas outside the subset are refused, naming what is not supported.
func TestSchemaUnsupported(t *testing.T) {
	raw, err := os.ReadFile("testdata/unsupported.json")
	if err != nil {
		t.Fatal(err)
	}
	var schemas []json.RawMessage
	if err := json.Unmarshal(raw, &schemas); err != nil {
		t.Fatal(err)
	}
	for _, s := range schemas {
		_, err := Compile(Spec{Kind: JSONSchema, Text: string(s)}, testVocab())
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", s, err)
			continue
		}
		t.Logf("%s: %v", s, err)
	}
	for _, bad := range []string{`{"type": 3}`, `{"type":"object"`, `{"$ref":"#/$defs/missing"}`, `{"enum": []}`, `{"type":"string","maxLength":-1}`} {
		if _, err := Compile(Spec{Kind: JSONSchema, Text: bad}, testVocab()); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", bad, err)
		}
	}
}

// Counts past what is compiled are refused naming the keyword and the path; a maximum no
// context could reach bounds nothing.
func TestSchemaCountBounds(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object","properties":{"s":{"type":"string","maxLength":60000}}}`: "maxLength 60000",
		`{"type":"string","minLength":1000000000}`:                                 "minLength 1000000000",
		`{"type":"array","items":{"type":"integer"},"minItems":60000}`:             "minItems 60000",
	} {
		_, err := Compile(Spec{Kind: JSONSchema, Text: schema}, testVocab())
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal naming %q", schema, err, want)
		}
	}
	if _, err := Compile(Spec{Kind: JSONSchema, Text: `{"type":"object","properties":{"s":{"type":"string","maxLength":60000}}}`}, testVocab()); !strings.Contains(err.Error(), "#/properties/s") {
		t.Errorf("the refusal names no path: %v", err)
	}
	for _, schema := range []string{`{"type":"string","maxLength":1e9}`, `{"type":"array","items":{"type":"string"},"maxItems":1e9}`, `{"type":"string","maxLength":1e400}`} {
		if _, err := Compile(Spec{Kind: JSONSchema, Text: schema}, testVocab()); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
	if _, err := Compile(Spec{Kind: JSONSchema, Text: `{"type":"string","maxLength":1.5}`}, testVocab()); !errors.Is(err, ErrInvalid) {
		t.Errorf("maxLength 1.5: %v", err)
	}
}
