package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// tokenizerJSON is the subset of a Hugging Face tokenizer.json that
// Load reads.
type tokenizerJSON struct {
	AddedTokens   []addedTokenJSON   `json:"added_tokens"`
	Normalizer    *componentJSON     `json:"normalizer"`
	PreTokenizer  *componentJSON     `json:"pre_tokenizer"`
	PostProcessor *postProcessorJSON `json:"post_processor"`
	Model         struct {
		Type                    string          `json:"type"`
		Vocab                   map[string]int  `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
		ByteFallback            bool            `json:"byte_fallback"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		UnkToken                *string         `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	} `json:"model"`
}

type addedTokenJSON struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// componentJSON holds the fields of any normalizer or pre-tokenizer this
// package understands.
type componentJSON struct {
	Type          string           `json:"type"`
	Normalizers   []*componentJSON `json:"normalizers"`
	PreTokenizers []*componentJSON `json:"pretokenizers"`
	Prepend       string           `json:"prepend"`
	Pattern       struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content        string `json:"content"`
	Replacement    string `json:"replacement"`
	AddPrefixSpace *bool  `json:"add_prefix_space"`
	PrependScheme  string `json:"prepend_scheme"`
	UseRegex       *bool  `json:"use_regex"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	// Digits: each digit a piece of its own, or runs of digits.
	IndividualDigits bool `json:"individual_digits"`
}

// pipeline is what the normalizer and pre-tokenizer amount to.
type pipeline struct {
	byteLevel   bool        // a ByteLevel pre-tokenizer
	prefixSpace bool        // ByteLevel add_prefix_space
	splits      []splitSpec // the Split pre-tokenizers (and ByteLevel's use_regex), in order
	spaceToMeta bool        // spaces become "▁" (Replace normalizer or Metaspace)
	dummyPrefix bool        // "▁" is prepended (Prepend normalizer or Metaspace)
	nfc         bool        // text is put in Unicode normalization form C (an NFC normalizer)
}

const metaspace = "▁"

// splitSpec is one Split pre-tokenizer: its regex (RE2 syntax, lookahead as newSplitter
// handles it) and its behavior.
type splitSpec struct{ pattern, behavior string }

// gpt2Pattern is the pre-tokenizer regex of GPT-2's ByteLevel (use_regex: true).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func (p *pipeline) normalizer(c *componentJSON) error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "Sequence":
		for _, n := range c.Normalizers {
			if err := p.normalizer(n); err != nil {
				return err
			}
		}
	case "Prepend":
		if c.Prepend != metaspace {
			return fmt.Errorf("%w: Prepend normalizer of %q (only %q)", ErrUnsupported, c.Prepend, metaspace)
		}
		p.dummyPrefix = true
	case "Replace":
		if c.Pattern.String == nil || *c.Pattern.String != " " || c.Content != metaspace {
			return fmt.Errorf("%w: Replace normalizer other than \" \" -> %q", ErrUnsupported, metaspace)
		}
		p.spaceToMeta = true
	case "NFC":
		p.nfc = true
	default:
		return fmt.Errorf("%w: normalizer %q", ErrUnsupported, c.Type)
	}
	return nil
}

func (p *pipeline) preTokenizer(c *componentJSON) error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "Sequence":
		for _, n := range c.PreTokenizers {
			if err := p.preTokenizer(n); err != nil {
				return err
			}
		}
	case "ByteLevel":
		p.byteLevel = true
		p.prefixSpace = c.AddPrefixSpace != nil && *c.AddPrefixSpace
		if c.UseRegex == nil || *c.UseRegex {
			p.splits = append(p.splits, splitSpec{gpt2Pattern, "Isolated"})
		}
	case "Split":
		if !splitBehaviors[c.Behavior] || c.Invert {
			return fmt.Errorf("%w: Split pre-tokenizer with behavior %q invert %v (only Isolated, MergedWithPrevious, MergedWithNext and Removed, not inverted)", ErrUnsupported, c.Behavior, c.Invert)
		}
		switch {
		case c.Pattern.Regex != nil:
			p.splits = append(p.splits, splitSpec{*c.Pattern.Regex, c.Behavior})
		case c.Pattern.String != nil:
			p.splits = append(p.splits, splitSpec{regexp.QuoteMeta(*c.Pattern.String), c.Behavior})
		default:
			return fmt.Errorf("%w: Split pre-tokenizer without a pattern", ErrBad)
		}
	case "Digits":
		// tokenizers' Digits splits on char::is_numeric, Unicode's N categories.
		if c.IndividualDigits {
			p.splits = append(p.splits, splitSpec{`\p{N}`, "Isolated"})
		} else {
			p.splits = append(p.splits, splitSpec{`\p{N}+`, "Isolated"})
		}
	case "Metaspace":
		if c.Replacement != "" && c.Replacement != metaspace {
			return fmt.Errorf("%w: Metaspace replacement %q", ErrUnsupported, c.Replacement)
		}
		p.spaceToMeta = true
		p.dummyPrefix = c.PrependScheme != "never" && (c.AddPrefixSpace == nil || *c.AddPrefixSpace)
	default:
		return fmt.Errorf("%w: pre-tokenizer %q", ErrUnsupported, c.Type)
	}
	return nil
}

// parseMerges reads merges written as "a b" strings or as ["a", "b"] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("%w: merge %d %q is not two tokens separated by one space", ErrBad, i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("%w: merges: %v", ErrBad, err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("%w: merge %d has %d tokens, not 2", ErrBad, i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// tokenizerConfigJSON is the subset of tokenizer_config.json that Load reads.
type tokenizerConfigJSON struct {
	BOSToken    json.RawMessage `json:"bos_token"`
	EOSToken    json.RawMessage `json:"eos_token"`
	AddBOSToken *bool           `json:"add_bos_token"`
}

// tokenContent reads a tokenizer_config.json token: null, "text" or
// {"content": "text", ...}. ok is false for null or absent.
func tokenContent(field string, raw json.RawMessage) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, fmt.Errorf("%w: %s must be a string or {\"content\": ...}", ErrBad, field)
	}
	return *obj.Content, true, nil
}

// postProcessorJSON is a TemplateProcessing post-processor, possibly inside a
// Sequence: Llama-3 adds BOS this way rather than with add_bos_token.
type postProcessorJSON struct {
	Type       string               `json:"type"`
	Processors []*postProcessorJSON `json:"processors"`
	Single     []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
	} `json:"single"`
}

// templateBOS is the special token a TemplateProcessing puts before a single
// sequence, or "".
func (p *postProcessorJSON) templateBOS() string {
	if p == nil {
		return ""
	}
	switch p.Type {
	case "Sequence":
		for _, q := range p.Processors {
			if s := q.templateBOS(); s != "" {
				return s
			}
		}
	case "TemplateProcessing":
		if len(p.Single) > 0 && p.Single[0].SpecialToken != nil {
			return p.Single[0].SpecialToken.ID
		}
	}
	return ""
}
