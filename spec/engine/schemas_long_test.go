//go:build long

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/grammar"
)

// The JSON Schema suite on the default model (CI's long tier: go test -tags long -run
// SchemaSuiteOnModel ./spec/engine/): each of spec/grammar's suite's schemas sampled 10 times
// at temperature 1 (seeds 1..10), all at once through the scheduler with ngram drafts, up to
// the end of the context. Every output that ends by itself validates (santhosh-tekuri's
// validator, formats asserted); the story model's free strings may run to the end of its
// 256-token context, and those outputs are counted, not failed. The schemas outside the
// subset are refused, naming what is not supported.
func TestSchemaSuiteOnModel(t *testing.T) {
	raw, err := os.ReadFile("../grammar/testdata/schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	var schemas []json.RawMessage
	if err := json.Unmarshal(raw, &schemas); err != nil {
		t.Fatal(err)
	}
	e := stories(t, &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4})
	var mu sync.Mutex
	var wg sync.WaitGroup
	ended, cut := 0, 0
	sem := make(chan struct{}, 32)
	for i, s := range schemas {
		val := compileValidator(t, s)
		for seed := 1; seed <= 10; seed++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				o := GenerateOptions{Structured: &grammar.Spec{Kind: grammar.JSONSchema, Text: string(s)},
					Sampling: Sampling{Temperature: 1, Seed: uint64(seed)}}
				res, err := e.Generate(context.Background(), "Once upon a time", o)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Errorf("schema %d seed %d: %v", i, seed, err)
				case res.Finish == spec.FinishStop:
					ended++
					if err := validate(val, res.Text); err != nil {
						t.Errorf("schema %d %s seed %d: %q: %v", i, s, seed, res.Text, err)
					}
				default:
					cut++
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d schemas x 10: %d outputs ended by themselves and validated, %d ran to the end of the context", len(schemas), ended, cut)
	if ended < len(schemas)*10/2 {
		t.Errorf("only %d of %d outputs ended by themselves", ended, len(schemas)*10)
	}
	raw, err = os.ReadFile("../grammar/testdata/unsupported.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		t.Fatal(err)
	}
	for _, s := range schemas {
		_, err := e.NewRequest(context.Background(), Prompt{Text: "a"}, GenerateOptions{Structured: &grammar.Spec{Kind: grammar.JSONSchema, Text: string(s)}})
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Param != "structured_outputs" || !strings.Contains(err.Error(), "unsupported") {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func compileValidator(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(s *jsonschema.Schema, text string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return s.Validate(v)
}
