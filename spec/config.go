package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// MaxSpeculativeTokens is the most draft tokens one step verifies: the verify programs run
// at most 16 rows (vLLM suggests 16-32 for suffix decoding; 15 is the most here).
const MaxSpeculativeTokens = 15

// Default n-gram sizes of the ngram drafter (vLLM's prompt_lookup_min / prompt_lookup_max).
const (
	DefaultPromptLookupMin = 1
	DefaultPromptLookupMax = 3
)

// Config selects and sizes a drafter. It is read from vLLM-style JSON, e.g.
//
//	--speculative-config '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":3}'
//
// "mode" is accepted as another name of "method". Validate is the one check of a config: call
// it where the config enters (spec/engine.Load does); it fills the defaults, and nothing
// after it checks the config again.
type Config struct {
	Mode                 string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	Model                string `json:"model"`
	PromptLookupMin      int    `json:"prompt_lookup_min"`
	PromptLookupMax      int    `json:"prompt_lookup_max"`
	// The suffix method's options (vLLM's names): the trees' depth, the earlier requests the
	// global tree keeps (0: none), the drafts per matched token, the least path probability.
	// 0 or nil: the default (Validate fills them in).
	SuffixMaxTreeDepth      int      `json:"suffix_decoding_max_tree_depth"`
	SuffixMaxCachedRequests *int     `json:"suffix_decoding_max_cached_requests"`
	SuffixMaxSpecFactor     float64  `json:"suffix_decoding_max_spec_factor"`
	SuffixMinTokenProb      *float64 `json:"suffix_decoding_min_token_prob"`
}

// configJSON is Config's JSON form, with "mode" as another name for "method".
type configJSON struct {
	plainConfig
	ModeAlias *string `json:"mode"`
}

// plainConfig is Config without its UnmarshalJSON.
type plainConfig Config

const configFields = "method (or mode), num_speculative_tokens, model, prompt_lookup_min, prompt_lookup_max, " +
	"suffix_decoding_max_tree_depth, suffix_decoding_max_cached_requests, suffix_decoding_max_spec_factor, suffix_decoding_min_token_prob"

// UnmarshalJSON reads a JSON object with the fields above; an unknown field is an error (a
// misspelt option should not be ignored silently).
func (c *Config) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j configJSON
	if err := dec.Decode(&j); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return fmt.Errorf("speculative config: %v (the fields are %s)", err, configFields)
		}
		return fmt.Errorf("speculative config: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("speculative config: more than one JSON value")
	}
	*c = Config(j.plainConfig)
	if m := j.ModeAlias; m != nil {
		if c.Mode != "" && c.Mode != *m {
			return fmt.Errorf("speculative config: method %q and mode %q disagree (give one of them)", c.Mode, *m)
		}
		c.Mode = *m
	}
	return nil
}

// Validate fills the defaults and checks c:
//
//   - Mode is a registered method (Names; case-insensitive, stored lower case). When it is empty, a model
//     of "ngram" or "[ngram]" means ngram (vLLM's old spelling) and any other model means
//     draft_model.
//   - NumSpeculativeTokens (k) is in 1..MaxSpeculativeTokens.
//   - ngram: PromptLookupMin defaults to 1 and PromptLookupMax to max(3, min); they need
//     1 <= min <= max.
//   - suffix: the suffix_decoding_* options get vLLM's defaults (validateSuffix); no Model.
//   - draft_model, medusa, eagle, eagle3 need a Model.
func (c *Config) Validate() error {
	c.Mode = strings.ToLower(strings.TrimSpace(c.Mode))
	if c.Mode == "" {
		switch c.Model {
		case "":
			return fmt.Errorf("speculative config: no method (want one of %s)", strings.Join(Names(), ", "))
		case "ngram", "[ngram]":
			c.Mode, c.Model = "ngram", ""
		default:
			c.Mode = "draft_model"
		}
	}
	if opener(c.Mode) == nil {
		return fmt.Errorf("speculative config: unknown method %q (want one of %s)", c.Mode, strings.Join(Names(), ", "))
	}
	if k := c.NumSpeculativeTokens; k < 1 || k > MaxSpeculativeTokens {
		return fmt.Errorf("speculative config: num_speculative_tokens %d outside 1..%d", k, MaxSpeculativeTokens)
	}
	if c.Mode != "suffix" && (c.SuffixMaxTreeDepth != 0 || c.SuffixMaxCachedRequests != nil || c.SuffixMaxSpecFactor != 0 || c.SuffixMinTokenProb != nil) {
		return fmt.Errorf("speculative config: suffix_decoding_* are suffix options, not %s ones", c.Mode)
	}
	if c.Mode == "ngram" {
		if c.PromptLookupMin == 0 {
			c.PromptLookupMin = DefaultPromptLookupMin
		}
		if c.PromptLookupMax == 0 {
			c.PromptLookupMax = max(DefaultPromptLookupMax, c.PromptLookupMin)
		}
		if c.PromptLookupMin < 1 || c.PromptLookupMax < c.PromptLookupMin {
			return fmt.Errorf("speculative config: ngram needs 1 <= prompt_lookup_min <= prompt_lookup_max, got %d and %d",
				c.PromptLookupMin, c.PromptLookupMax)
		}
		return nil
	}
	if c.PromptLookupMin != 0 || c.PromptLookupMax != 0 {
		return fmt.Errorf("speculative config: prompt_lookup_min/max are ngram options, not %s ones", c.Mode)
	}
	if c.Mode == "suffix" {
		return c.validateSuffix()
	}
	if c.Model == "" {
		return fmt.Errorf("speculative config: method %s needs a model (the drafter's checkpoint folder)", c.Mode)
	}
	return nil
}

// validateSuffix fills and checks the suffix method's options.
func (c *Config) validateSuffix() error {
	if c.Model != "" {
		return fmt.Errorf("speculative config: suffix decoding takes no model (got %q)", c.Model)
	}
	if c.SuffixMaxTreeDepth == 0 {
		c.SuffixMaxTreeDepth = DefaultSuffixMaxTreeDepth
	}
	if c.SuffixMaxCachedRequests == nil {
		n := DefaultSuffixMaxCachedRequests
		c.SuffixMaxCachedRequests = &n
	}
	if c.SuffixMaxSpecFactor == 0 {
		c.SuffixMaxSpecFactor = DefaultSuffixMaxSpecFactor
	}
	if c.SuffixMinTokenProb == nil {
		p := DefaultSuffixMinTokenProb
		c.SuffixMinTokenProb = &p
	}
	f, p := c.SuffixMaxSpecFactor, *c.SuffixMinTokenProb
	switch {
	case c.SuffixMaxTreeDepth < 2 || c.SuffixMaxTreeDepth > 1024:
		return fmt.Errorf("speculative config: suffix_decoding_max_tree_depth %d outside 2..1024", c.SuffixMaxTreeDepth)
	case *c.SuffixMaxCachedRequests < 0:
		return fmt.Errorf("speculative config: suffix_decoding_max_cached_requests %d: want 0 (no global tree) or more", *c.SuffixMaxCachedRequests)
	case !(f > 0) || f > 1e6:
		return fmt.Errorf("speculative config: suffix_decoding_max_spec_factor %v: want a value > 0", f)
	case !(p >= 0 && p <= 1):
		return fmt.Errorf("speculative config: suffix_decoding_min_token_prob %v outside [0, 1]", p)
	}
	return nil
}
