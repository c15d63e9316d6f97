package grammar

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// hostileSpecs are the structured outputs that once compiled for minutes: anyOf beside
// properties nested 20 deep (2^20 subschemas), 20000 properties (quadratic rule naming), 1500
// rules whose automata are 2^15 states each.
func hostileSpecs() map[string]Spec {
	nested := `{"type":"object"}`
	for range 20 {
		nested = `{"anyOf":[{"type":"object"},{"type":"object"}],"properties":{"x":` + nested + `}}`
	}
	var props []string
	for i := range 20000 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"integer"}`, i))
	}
	var rules []string
	var names []string
	for i := range 1500 {
		rules = append(rules, fmt.Sprintf(`r%d ::= [ab]* "a" [ab]{14}`, i))
		names = append(names, fmt.Sprintf("r%d", i))
	}
	return map[string]Spec{
		"nested anyOf":     {Kind: JSONSchema, Text: nested},
		"20000 properties": {Kind: JSONSchema, Text: `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`},
		"1500 heavy rules": {Kind: GBNF, Text: "root ::= " + strings.Join(names, " | ") + "\n" + strings.Join(rules, "\n")},
	}
}

// Each compiles or is refused within the compile's budget, the refusal naming the limit.
func TestCompileBudget(t *testing.T) {
	for name, s := range hostileSpecs() {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(s, testVocab())
			t.Logf("%v", err)
			if err != nil && (!errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "too large")) {
				t.Fatalf("want it compiled or refused as too large: %v", err)
			}
		})
	}
}

// A compile whose context ends stops with the context's error.
func TestCompileCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := CompileContext(ctx, hostileSpecs()["20000 properties"], testVocab())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled compile: %v", err)
	}
}

// Many rules of one base name are named in linear time: the 2000th "x" rule is x-2001.
func TestRuleNamesStayLinear(t *testing.T) {
	r := newRules()
	var last int
	for range 2001 {
		last = r.add("x", empty())
	}
	if r.names[last] != "x-2001" || len(r.suffix) != 1 {
		t.Fatalf("last rule %q", r.names[last])
	}
}

// The cache keeps about its byte bound of grammars, dropping the least recently used: the
// grammars' sizes, not only their count, bound it.
func TestCacheBoundedInBytes(t *testing.T) {
	c := NewCache(testVocab(), 64)
	spec := func(i int) Spec { return Spec{Kind: GBNF, Text: fmt.Sprintf(`root ::= [ab]* "a" [ab]{10} # %d`, i)} }
	first, err := c.Get(context.Background(), spec(0))
	if err != nil {
		t.Fatal(err)
	}
	c.maxBytes = 5*first.Bytes() + first.Bytes()/2 // room for five
	for i := 1; i < 20; i++ {
		if _, err := c.Get(context.Background(), spec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if c.lru.Len() != 5 {
		t.Fatalf("%d grammars of %d bytes kept under a bound of %d bytes", c.lru.Len(), first.Bytes(), c.maxBytes)
	}
	if _, ok := c.at[spec(19).key()]; !ok {
		t.Fatal("the newest grammar was dropped")
	}
}
