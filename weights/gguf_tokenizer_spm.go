package weights

import (
	"fmt"
	"sort"

	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/tokenizer"
)

// llama.cpp's token types for SentencePiece vocabularies (with ggufTokenControl and the rest).
const (
	ggufTokenUnknown = 2
	ggufTokenByte    = 6
)

// ggufSPM builds a GGUF file's SentencePiece tokenizer (tokenizer.ggml.model "llama": tokens,
// scores, types) as the SentencePiece-style BPE tokenizer.json it stands for. llama.cpp merges
// the adjacent pair of symbols whose concatenation is the highest-scoring token, the leftmost
// on a tie; the same merges, ranked by that score (equal scores, equal ranks), make the BPE
// merge the same pairs. "▁" replaces spaces, and one is prepended unless add_space_prefix is
// false; unknown characters fall back to the <0xXX> byte tokens.
func ggufSPM(f *gguf.File, m *ggufMeta, rows int) (*tokenizer.Tokenizer, error) {
	tokens, err := ggufTokens(f, rows)
	if err != nil {
		return nil, err
	}
	scores, err := ggufArray[float32](f, "tokenizer.ggml.scores", len(tokens))
	if err != nil {
		return nil, err
	}
	types, err := ggufArray[int32](f, "tokenizer.ggml.token_type", len(tokens))
	if err != nil {
		return nil, err
	}
	if len(types) != len(tokens) || len(scores) != len(tokens) {
		return nil, fmt.Errorf("%w: %d token types and %d scores for %d tokens", ErrBadTokenizer, len(types), len(scores), len(tokens))
	}
	vocab := map[string]int{}
	var added []map[string]any
	unk := ""
	for id, tok := range tokens {
		switch types[id] {
		case ggufTokenUnused:
			continue
		case ggufTokenUnknown:
			unk = tok
			added = append(added, map[string]any{"id": id, "content": tok, "special": true})
		case ggufTokenControl, ggufTokenUserDefined:
			added = append(added, map[string]any{"id": id, "content": tok, "special": types[id] == ggufTokenControl})
		}
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = id
		}
	}
	// Every split of a normal token into two normal tokens is a merge making it.
	type merge struct {
		a, b  string
		score float32
	}
	var merges []merge
	for id, tok := range tokens {
		if types[id] != 1 { // normal
			continue
		}
		for k := range tok {
			if k == 0 {
				continue
			}
			a, b := tok[:k], tok[k:]
			ia, okA := vocab[a]
			ib, okB := vocab[b]
			if okA && okB && types[ia] == 1 && types[ib] == 1 {
				merges = append(merges, merge{a, b, scores[id]})
			}
		}
	}
	sort.SliceStable(merges, func(i, j int) bool { return merges[i].score > merges[j].score })
	pairs := make([][2]string, len(merges))
	for i, mg := range merges {
		pairs[i] = [2]string{mg.a, mg.b}
	}
	norms := []any{map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}
	if v, ok := f.Get("tokenizer.ggml.add_space_prefix"); !ok || v == true {
		norms = append([]any{map[string]any{"type": "Prepend", "prepend": "▁"}}, norms...)
	}
	model := map[string]any{"type": "BPE", "vocab": vocab, "merges": pairs, "byte_fallback": true}
	if unk != "" {
		model["unk_token"] = unk
	}
	doc := map[string]any{
		"added_tokens": added, "normalizer": map[string]any{"type": "Sequence", "normalizers": norms},
		"pre_tokenizer": nil, "post_processor": nil, "model": model,
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
	}
	t, err := ggufParse(f, m, doc, tokens, types)
	if err != nil {
		return nil, err
	}
	// Equal scores are one rank, so that the leftmost pair wins among them as in llama.cpp.
	rank, last := int32(-1), float32(0)
	for i, mg := range merges {
		if i == 0 || mg.score != last {
			rank, last = int32(i), mg.score
		}
		t.SetMergeRank(mg.a, mg.b, rank)
	}
	return t, nil
}
