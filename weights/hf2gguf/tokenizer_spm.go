package hf2gguf

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/tokenizer"
)

var byteToken = regexp.MustCompile(`^<0x[0-9A-F]{2}>$`)

// spmTokenizer writes a SentencePiece-style BPE tokenizer.json (Llama 2, Mistral, TinyLlama:
// "▁" for spaces, byte fallback) as llama.cpp's "llama" tokenizer: the tokens in id order with
// their types (the <0xXX> byte tokens as bytes, <unk> as unknown) and scores. llama.cpp merges
// the adjacent pair whose concatenation scores highest, so a token's score is minus the rank
// of the first merge that makes it (tokens no merge makes score 0: they are never a merge's
// result): the same order Hugging Face's BPE merges in.
func spmTokenizer(dir string, c *weights.Config, tf *tokenizerFile, tok *tokenizer.Tokenizer) ([]gguf.KV, error) {
	tokens := make([]string, c.Vocab)
	types := make([]int32, c.Vocab)
	scores := make([]float32, c.Vocab)
	for i := range tokens {
		tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), tokenUnused
	}
	for s, id := range tf.Model.Vocab {
		if id < 0 || id >= c.Vocab {
			return nil, fmt.Errorf("hf2gguf: token %q has id %d, outside the vocabulary of %d", s, id, c.Vocab)
		}
		tokens[id], types[id] = s, tokenNormal
		if byteToken.MatchString(s) {
			types[id] = tokenByte
		}
	}
	for _, a := range tf.AddedTokens {
		if a.ID < 0 || a.ID >= c.Vocab {
			return nil, fmt.Errorf("hf2gguf: token %q has id %d, outside the vocabulary of %d", a.Content, a.ID, c.Vocab)
		}
		typ := int32(tokenUserDefined)
		switch {
		case a.Content == "<unk>":
			typ = tokenUnknown
		case a.Special:
			typ = tokenControl
		}
		tokens[a.ID], types[a.ID] = a.Content, typ
	}
	merges, err := mergeList(tf.Model.Merges)
	if err != nil {
		return nil, err
	}
	made := map[string]bool{}
	for rank, m := range merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok {
			return nil, fmt.Errorf("hf2gguf: merge %d %q is not two tokens", rank, m)
		}
		if id, ok := tf.Model.Vocab[a+b]; ok && !made[a+b] {
			made[a+b], scores[id] = true, -float32(rank)
		}
	}
	kvs := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array{Type: gguf.TypeString, Values: tokens}},
		{Key: "tokenizer.ggml.scores", Value: gguf.Array{Type: gguf.TypeFloat32, Values: scores}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Array{Type: gguf.TypeInt32, Values: types}},
		{Key: "tokenizer.ggml.add_space_prefix", Value: tok.DummyPrefix()},
	}
	if id, ok := tf.Model.Vocab["<unk>"]; ok {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(id)})
	}
	return append(kvs, commonKVs(dir, c, tok)...), nil
}
