package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
)

func TestNgramPropose(t *testing.T) {
	for _, c := range []struct {
		name     string
		min, max int
		ctx      []int
		k        int
		want     []int
	}{
		// The last 3 tokens (1 2 3) occur at 0 and at 5: the most recent (5) wins, followed by 9 8.
		{"most recent match", 1, 3, []int{1, 2, 3, 7, 7, 1, 2, 3, 9, 8, 4, 1, 2, 3}, 2, []int{9, 8}},
		{"at most k", 1, 3, []int{1, 2, 3, 9, 8, 7, 6, 1, 2, 3}, 3, []int{9, 8, 7}},
		// Fewer than k tokens follow the match before the end: the rest wraps around (period 4).
		{"wraps a loop", 1, 3, []int{5, 1, 2, 3, 4, 1, 2, 3}, 6, []int{4, 1, 2, 3, 4, 1}},
		{"repeated token", 1, 3, []int{6, 6}, 3, []int{6, 6, 6}},
		// The 3-gram 4 1 2 and the 2-gram 1 2 do not recur, the 1-gram 2 does (followed by 5).
		{"falls back to shorter n", 1, 3, []int{2, 5, 0, 4, 1, 2}, 2, []int{5, 0}},
		// The longest n wins over a more recent shorter match: 2-gram 3 4 -> 5; 1-gram 4 -> 9.
		{"longest n first", 1, 2, []int{3, 4, 5, 4, 9, 3, 4}, 1, []int{5}},
		{"min respected", 2, 3, []int{2, 5, 0, 4, 1, 2}, 2, nil},
		// max 1 ignores the 2-gram 3 4 (-> 5) and takes the most recent 4 (-> 9).
		{"max respected", 1, 1, []int{3, 4, 5, 4, 9, 3, 4}, 1, []int{9}},
		{"no match", 1, 3, []int{1, 2, 3, 4}, 4, nil},
		{"one token", 1, 3, []int{1}, 4, nil},
		{"k zero", 1, 3, []int{1, 1, 1}, 0, nil},
	} {
		g := &Ngram{Min: c.min, Max: c.max}
		ctx := slices.Clone(c.ctx)
		ps := []Proposal{{Drafter: g, Ctx: ctx, K: c.k}}
		err := g.Propose(ps)
		if got := ps[0].Drafts; err != nil || ps[0].Q != nil || !slices.Equal(got, c.want) || len(got) > c.k {
			t.Errorf("%s: Propose(%v, %d) = %v, %v, %v; want %v", c.name, c.ctx, c.k, got, ps[0].Q, err, c.want)
		}
		if !slices.Equal(ctx, c.ctx) {
			t.Errorf("%s: Propose modified ctx", c.name)
		}
	}
}

// The device methods register from spec/neural, which this package's tests do not link:
// stand-ins take their names, so that the configs naming them validate.
func init() {
	for _, name := range []string{"draft_model", "eagle", "eagle3", "medusa"} {
		Register(name, func(Config, *weights.Config) (Checkpoint, error) { return nil, errors.New("a stand-in") })
	}
}

func parseConfig(js string) (Config, error) {
	var c Config
	if err := c.UnmarshalJSON([]byte(js)); err != nil {
		return Config{}, err
	}
	err := c.Validate()
	return c, err
}

func TestNgramRegistered(t *testing.T) {
	cfg, err := parseConfig(`{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":5}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg, nil); !errors.Is(err, ErrNeedsTarget) {
		t.Fatalf("no target: %v", err)
	}
	ck, err := Open(cfg, &weights.Config{Vocab: 100})
	if err != nil {
		t.Fatal(err)
	}
	meth, ok := ck.(Method)
	if !ok {
		t.Fatalf("the ngram checkpoint %T is not its method", ck)
	}
	d, err := meth.NewDrafter()
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := d.(*Ngram); !ok || g.Min != 1 || g.Max != 5 || meth.Name() != "ngram" || d.Keep() != 0 {
		t.Fatalf("got %#v", d)
	}
	cfg.Mode = "nope"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ngram") {
		t.Fatalf("unknown drafter: %v (want an error listing ngram)", err)
	}
}

func TestParseConfig(t *testing.T) {
	good := []struct {
		js   string
		want Config
	}{
		{`{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":3}`, Config{Mode: "ngram", NumSpeculativeTokens: 4, PromptLookupMin: 1, PromptLookupMax: 3}},
		{`{"mode":"ngram","num_speculative_tokens":8}`, Config{Mode: "ngram", NumSpeculativeTokens: 8, PromptLookupMin: 1, PromptLookupMax: 3}},
		{`{"method":"NGRAM","num_speculative_tokens":1,"prompt_lookup_min":4}`, Config{Mode: "ngram", NumSpeculativeTokens: 1, PromptLookupMin: 4, PromptLookupMax: 4}},
		{`{"method":"eagle3","num_speculative_tokens":3,"model":"/m/eagle"}`, Config{Mode: "eagle3", NumSpeculativeTokens: 3, Model: "/m/eagle"}},
		{`{"model":"/m/small","num_speculative_tokens":2}`, Config{Mode: "draft_model", NumSpeculativeTokens: 2, Model: "/m/small"}},
		{`{"model":"[ngram]","num_speculative_tokens":2}`, Config{Mode: "ngram", NumSpeculativeTokens: 2, PromptLookupMin: 1, PromptLookupMax: 3}},
	}
	for _, c := range good {
		got, err := parseConfig(c.js)
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.js, got, err, c.want)
		}
	}
	bad := []struct{ js, msg string }{
		{`{"method":"lookahead","num_speculative_tokens":4}`, "draft_model, eagle, eagle3, medusa, ngram"},
		{`{"method":"ngram","num_speculative_tokens":0}`, "1..15"},
		{`{"method":"ngram","num_speculative_tokens":16}`, "1..15"},
		{`{"method":"ngram","num_speculative_tokens":2,"prompt_lookup_min":3,"prompt_lookup_max":2}`, "prompt_lookup_min <= prompt_lookup_max"},
		{`{"method":"draft_model","num_speculative_tokens":2}`, "needs a model"},
		{`{"method":"eagle","num_speculative_tokens":2,"model":"x","prompt_lookup_max":2}`, "ngram options"},
		{`{"method":"ngram","mode":"eagle","num_speculative_tokens":2}`, "disagree"},
		{`{"method":"ngram","num_speculative_tokens":2,"k":3}`, "unknown field"},
		{`{"num_speculative_tokens":2}`, "no method"},
		{`{"method":"ngram",`, "speculative config"},
	}
	for _, c := range bad {
		if _, err := parseConfig(c.js); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want one containing %q", c.js, err, c.msg)
		}
	}
}
