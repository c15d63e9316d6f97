package hf2gguf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/tokenizer"
)

// llama.cpp's token types (gguf-py's TokenType).
const (
	tokenNormal      = 1
	tokenUnknown     = 2
	tokenControl     = 3
	tokenUserDefined = 4
	tokenUnused      = 5
	tokenByte        = 6
)

// Pre-tokenizer regexes of tokenizer.json, by the name llama.cpp gives the pre-tokenizer.
var preTokenizers = map[string]string{
	"llama-bpe": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"qwen2":     `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

type tokenizerFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	PreTokenizer *preTokenizer `json:"pre_tokenizer"`
	Model        struct {
		Type   string          `json:"type"`
		Vocab  map[string]int  `json:"vocab"`
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
}

type preTokenizer struct {
	Type          string          `json:"type"`
	UseRegex      *bool           `json:"use_regex"`
	Pretokenizers []*preTokenizer `json:"pretokenizers"`
	Pattern       struct {
		Regex string `json:"Regex"`
	} `json:"pattern"`
}

// readTokenizer turns tokenizer.json (byte-level BPE) and tokenizer_config.json into
// tokenizer.ggml.* entries: the tokens in id order padded with [PADn] to the vocabulary,
// their types, the merges, the pre-tokenizer's name, BOS/EOS, and the chat template.
func readTokenizer(dir string, c *weights.Config) ([]gguf.KV, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	var tf tokenizerFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return nil, fmt.Errorf("hf2gguf: tokenizer.json: %w", err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	if tok.Kind() == tokenizer.SentencePieceBPE {
		return spmTokenizer(dir, c, &tf, tok)
	}
	pre, err := preName(tf.PreTokenizer)
	if err != nil {
		return nil, err
	}
	if tf.Model.Type != "BPE" {
		return nil, fmt.Errorf("hf2gguf: %w: tokenizer model %q (BPE, byte-level or SentencePiece-style, is written)", weights.ErrUnsupported, tf.Model.Type)
	}
	tokens := make([]string, c.Vocab)
	types := make([]int32, c.Vocab)
	for i := range tokens {
		tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), tokenUnused
	}
	set := func(id int, s string, typ int32) error {
		if id < 0 || id >= c.Vocab {
			return fmt.Errorf("hf2gguf: token %q has id %d, outside the vocabulary of %d", s, id, c.Vocab)
		}
		tokens[id], types[id] = s, typ
		return nil
	}
	for s, id := range tf.Model.Vocab {
		if err := set(id, s, tokenNormal); err != nil {
			return nil, err
		}
	}
	for _, a := range tf.AddedTokens {
		typ := int32(tokenUserDefined)
		if a.Special {
			typ = tokenControl
		}
		if err := set(a.ID, a.Content, typ); err != nil {
			return nil, err
		}
	}
	merges, err := mergeList(tf.Model.Merges)
	if err != nil {
		return nil, err
	}
	kvs := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: pre},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array{Type: gguf.TypeString, Values: tokens}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Array{Type: gguf.TypeInt32, Values: types}},
		{Key: "tokenizer.ggml.merges", Value: gguf.Array{Type: gguf.TypeString, Values: merges}},
	}
	return append(kvs, commonKVs(dir, c, tok)...), nil
}

// commonKVs are the entries every tokenizer has: BOS, EOS, whether BOS is added, the chat
// template.
func commonKVs(dir string, c *weights.Config, tok *tokenizer.Tokenizer) []gguf.KV {
	var kvs []gguf.KV
	if c.BOS >= 0 {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: uint32(c.BOS)})
	}
	if len(c.EOS) > 0 {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: uint32(c.EOS[0])})
	}
	kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: tok.AddBOS()})
	if tmpl, _ := chatTemplate(dir); tmpl != "" {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template", Value: tmpl})
	}
	return kvs
}

// preName is llama.cpp's name of a byte-level pre-tokenizer: gpt-2 for ByteLevel with its own
// regex, llama-bpe or qwen2 for a Split of their regex.
func preName(p *preTokenizer) (string, error) {
	if p == nil {
		return "", fmt.Errorf("hf2gguf: %w: tokenizer.json has no pre-tokenizer (a byte-level BPE needs one)", weights.ErrUnsupported)
	}
	switch p.Type {
	case "ByteLevel":
		if p.UseRegex == nil || *p.UseRegex {
			return "gpt-2", nil
		}
	case "Sequence":
		for _, q := range p.Pretokenizers {
			if q.Type != "Split" {
				continue
			}
			for name, re := range preTokenizers {
				if q.Pattern.Regex == re {
					return name, nil
				}
			}
			return "", fmt.Errorf("hf2gguf: %w: a Split pre-tokenizer of regex %q (known: Llama-3's, Qwen2's)", weights.ErrUnsupported, q.Pattern.Regex)
		}
	}
	return "", fmt.Errorf("hf2gguf: %w: pre-tokenizer %q", weights.ErrUnsupported, p.Type)
}

// mergeList is tokenizer.json's merges as "a b" strings (they come as such or as pairs).
func mergeList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return []string{}, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		return strs, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("hf2gguf: tokenizer.json merges: %w", err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}

// chatTemplate is tokenizer_config.json's chat_template when it is one string ("" if none).
func chatTemplate(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var tc struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(b, &tc); err != nil {
		return "", fmt.Errorf("hf2gguf: tokenizer_config.json: %w", err)
	}
	var s string
	if json.Unmarshal(tc.ChatTemplate, &s) == nil {
		return s, nil
	}
	return "", nil
}
