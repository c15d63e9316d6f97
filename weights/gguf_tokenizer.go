package weights

import (
	"encoding/json"
	"fmt"

	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/tokenizer"
)

// The pre-tokenizers of byte-level BPE, by the name llama.cpp gives them (tokenizer.ggml.pre):
// the tokenizer.json pre_tokenizer each stands for.
var ggufPreTokenizers = map[string]any{
	"gpt-2":     map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
	"default":   map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
	"llama-bpe": splitThenBytes(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`),
	// SmolLM's (and StarCoder's): each digit apart, then GPT-2's split.
	"smollm": map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Digits", "individual_digits": true},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
	}},
	"qwen2": splitThenBytes(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`),
}

func splitThenBytes(re string) any {
	return map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": re}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
	}}
}

// llama.cpp's token types (tokenizer.ggml.token_type).
const (
	ggufTokenControl     = 3
	ggufTokenUserDefined = 4
	ggufTokenUnused      = 5
)

// ggufTokenizer builds the tokenizer a GGUF file describes (tokenizer.ggml.*: byte-level BPE,
// "gpt2", here; SentencePiece, "llama", in ggufSPM), as the tokenizer.json and tokenizer_config.json it stands for: the tokens in id order
// ([PADn] fillers left out), control and user-defined tokens as added tokens, the merges, the
// pre-tokenizer its name stands for, BOS and EOS and whether BOS is added. rows (the
// embedding's rows) bounds the tokens before any is decoded.
func ggufTokenizer(f *gguf.File, rows int) (*tokenizer.Tokenizer, error) {
	m := &ggufMeta{f: f}
	switch model := m.str("tokenizer.ggml.model"); model {
	case "gpt2":
	case "llama":
		return ggufSPM(f, m, rows)
	default:
		return nil, fmt.Errorf("%w: GGUF tokenizer %q (byte-level BPE, \"gpt2\", and SentencePiece, \"llama\", are read)", ErrUnsupported, model)
	}
	pre := m.str("tokenizer.ggml.pre")
	preTok, ok := ggufPreTokenizers[pre]
	if !ok {
		return nil, fmt.Errorf("%w: GGUF pre-tokenizer %q (known: gpt-2, llama-bpe, qwen2, smollm)", ErrUnsupported, pre)
	}
	tokens, err := ggufTokens(f, rows)
	if err != nil {
		return nil, err
	}
	types, err := ggufArray[int32](f, "tokenizer.ggml.token_type", len(tokens))
	if err != nil {
		return nil, err
	}
	if len(types) != len(tokens) {
		return nil, fmt.Errorf("%w: %d token types for %d tokens", ErrBadTokenizer, len(types), len(tokens))
	}
	// Real files hold up to twice as many merges as tokens (Llama 3: 280147 for 128256).
	merges, err := ggufArray[string](f, "tokenizer.ggml.merges", 4*len(tokens))
	if err != nil {
		return nil, err
	}
	vocab := map[string]int{}
	var added []map[string]any
	for id, tok := range tokens {
		switch types[id] {
		case ggufTokenUnused:
			continue
		case ggufTokenControl, ggufTokenUserDefined:
			added = append(added, map[string]any{"id": id, "content": tok, "special": types[id] == ggufTokenControl})
		}
		vocab[tok] = id
	}
	doc := map[string]any{
		"added_tokens": added, "normalizer": nil, "pre_tokenizer": preTok, "post_processor": nil,
		"decoder": map[string]any{"type": "ByteLevel"},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": pre == "llama-bpe"},
	}
	return ggufParse(f, m, doc, tokens, types)
}

// ggufParse builds the tokenizer from the tokenizer.json document doc and the file's BOS, EOS
// and add_bos_token.
func ggufParse(f *gguf.File, m *ggufMeta, doc map[string]any, tokens []string, types []int32) (*tokenizer.Tokenizer, error) {
	cfg := map[string]any{}
	name := func(key string) any {
		if _, ok := f.Get(key); !ok {
			return nil
		}
		id := m.uint(key, 0)
		switch {
		case id >= len(tokens):
			m.fail("%s = %d, outside the %d tokens", key, id, len(tokens))
			return nil
		case types[id] == ggufTokenUnused:
			return nil // a filler's id: the model's config still stops at it
		}
		return tokens[id]
	}
	cfg["bos_token"], cfg["eos_token"] = name("tokenizer.ggml.bos_token_id"), name("tokenizer.ggml.eos_token_id")
	if v, ok := f.Get("tokenizer.ggml.add_bos_token"); ok {
		cfg["add_bos_token"] = v
	}
	if m.err != nil {
		return nil, m.err
	}
	tj, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return tokenizer.Parse(tj, cj)
}

// ggufArray is a metadata array of element type T, refused before it is decoded if it holds
// more than most elements.
func ggufArray[T any](f *gguf.File, key string, most int) ([]T, error) {
	v, ok := f.Get(key)
	if !ok {
		return nil, fmt.Errorf("%w: GGUF has no %s", ErrBadTokenizer, key)
	}
	a, ok := v.(gguf.Array)
	if !ok {
		return nil, fmt.Errorf("%w: GGUF %s is not an array", ErrBadTokenizer, key)
	}
	if a.Len() > most {
		return nil, fmt.Errorf("%w: GGUF %s holds %d entries, more than the %d the model's vocabulary allows", ErrBadTokenizer, key, a.Len(), most)
	}
	out, ok := a.Elements().([]T)
	if !ok {
		return nil, fmt.Errorf("%w: GGUF %s is an array of %T", ErrBadTokenizer, key, a.Elements())
	}
	return out, nil
}

// Bounds on a GGUF vocabulary's tokens, checked before the tokenizer is built: building it
// splits each token at every byte (SentencePiece's merges), which costs the square of its
// length. Real vocabularies' longest tokens are 256 bytes, and their squared lengths sum to
// under 3e7 (Gemma 3's 262144 tokens).
const (
	maxTokenBytes   = 1024
	maxTokenSquares = 1 << 28
)

// ggufTokens reads tokenizer.ggml.tokens: at most vocab of them (the embedding's rows), each
// within the bounds above.
func ggufTokens(f *gguf.File, vocab int) ([]string, error) {
	tokens, err := ggufArray[string](f, "tokenizer.ggml.tokens", vocab)
	if err != nil {
		return nil, err
	}
	squares := 0
	for id, tok := range tokens {
		if len(tok) > maxTokenBytes {
			return nil, fmt.Errorf("%w: GGUF token %d is %d bytes long (at most %d)", ErrBadTokenizer, id, len(tok), maxTokenBytes)
		}
		if squares += len(tok) * len(tok); squares > maxTokenSquares {
			return nil, fmt.Errorf("%w: GGUF tokens too long: their squared lengths sum past %d by token %d (real vocabularies stay under 3e7)", ErrBadTokenizer, maxTokenSquares, id)
		}
	}
	return tokens, nil
}
