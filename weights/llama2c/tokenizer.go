package llama2c

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// Tokenizer is a llama2.c tokenizer.bin: a piece and a score per id.
type Tokenizer struct {
	MaxTokenLength int
	Pieces         [][]byte // as stored: spaces as ' ', byte tokens as raw bytes
	Scores         []float32
}

// Llama-2's byte-fallback tokens are ids FirstByteToken..FirstByteToken+255.
const FirstByteToken = 3

// MaxTokenLength bounds a tokenizer.bin's max_token_length. Real vocabularies
// stay far below it; deriving merges costs the square of a piece's length.
const MaxTokenLength = 1 << 10

// ParseTokenizer reads tokenizer.bin bytes holding vocab entries: int32
// max_token_length (1..MaxTokenLength), then per id float32 score, int32
// length (at most max_token_length, as llama2.c relies on), the bytes.
func ParseTokenizer(b []byte, vocab int) (*Tokenizer, error) {
	if vocab <= 0 {
		return nil, fmt.Errorf("%w: vocabulary size %d", ErrFormat, vocab)
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: tokenizer.bin is %d bytes", ErrFormat, len(b))
	}
	t := &Tokenizer{MaxTokenLength: int(int32(binary.LittleEndian.Uint32(b)))}
	if t.MaxTokenLength < 1 || t.MaxTokenLength > MaxTokenLength {
		return nil, fmt.Errorf("%w: tokenizer.bin max_token_length %d, want 1..%d", ErrFormat, t.MaxTokenLength, MaxTokenLength)
	}
	off := 4
	for id := 0; id < vocab; id++ {
		if len(b)-off < 8 {
			return nil, fmt.Errorf("%w: tokenizer.bin ends at token %d of %d", ErrFormat, id, vocab)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
		n := int(int32(binary.LittleEndian.Uint32(b[off+4:])))
		off += 8
		if n < 0 || n > len(b)-off {
			return nil, fmt.Errorf("%w: token %d has length %d, beyond the end of tokenizer.bin", ErrFormat, id, n)
		}
		if n > t.MaxTokenLength {
			return nil, fmt.Errorf("%w: token %d is %d bytes, longer than the file's max_token_length %d", ErrFormat, id, n, t.MaxTokenLength)
		}
		t.Pieces = append(t.Pieces, b[off:off+n:off+n])
		t.Scores = append(t.Scores, score)
		off += n
	}
	if off != len(b) {
		return nil, fmt.Errorf("%w: tokenizer.bin has %d bytes after token %d", ErrFormat, len(b)-off, vocab-1)
	}
	return t, nil
}

// ReadTokenizer reads the tokenizer.bin at path for a vocabulary of vocab ids
// (the model.bin header's vocab_size).
func ReadTokenizer(path string, vocab int) (*Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTokenizer(b, vocab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// HFPieces are the vocabulary as tokenizer.json spells it: "<unk>", "<s>",
// "</s>", the byte tokens "<0x00>".."<0xFF>" (ids 3..258, by position: the
// file stores them as raw bytes), then the pieces with ' ' written as "▁".
// Pieces must be valid UTF-8 and distinct.
func (t *Tokenizer) HFPieces() ([]string, error) {
	if len(t.Pieces) < FirstByteToken+256 {
		return nil, fmt.Errorf("%w: %d tokens, fewer than Llama-2's 3 special and 256 byte tokens", ErrFormat, len(t.Pieces))
	}
	out := make([]string, len(t.Pieces))
	out[UNK], out[BOS], out[EOS] = "<unk>", "<s>", "</s>"
	for b := 0; b < 256; b++ {
		out[FirstByteToken+b] = fmt.Sprintf("<0x%02X>", b)
	}
	seen := make(map[string]int, len(out))
	for id, p := range out[:FirstByteToken+256] {
		seen[p] = id
	}
	for id := FirstByteToken + 256; id < len(out); id++ {
		p := t.Pieces[id]
		if !utf8.Valid(p) {
			return nil, fmt.Errorf("%w: token %d %q is not valid UTF-8", ErrFormat, id, p)
		}
		s := strings.ReplaceAll(string(p), " ", "▁")
		if prev, dup := seen[s]; dup {
			return nil, fmt.Errorf("%w: tokens %d and %d are both %q", ErrFormat, prev, id, s)
		}
		seen[s] = id
		out[id] = s
	}
	return out, nil
}

// Merges derives the BPE merges list so that merge rank order equals
// llama2.c's score order: for every ordinary piece P and every split of P
// (between code points) into two ordinary pieces A and B, "A B" is a merge
// with P's score; merges are sorted by score, highest first, then by P's id,
// then by split position. llama2.c merges any adjacent pair whose
// concatenation is a piece, preferring the highest score, so both choose the
// same merges — except that llama2.c ties between equal scores (the
// whitespace-run pieces, all -1e9) go to the leftmost pair, and that llama2.c
// could also merge its raw byte tokens, which tokenizer.json cannot express.
func (t *Tokenizer) Merges(pieces []string) []string {
	ids := make(map[string]int, len(pieces))
	for id := FirstByteToken + 256; id < len(pieces); id++ {
		ids[pieces[id]] = id
	}
	type merge struct {
		score     float32
		id, split int
		text      string
	}
	var ms []merge
	for id := FirstByteToken + 256; id < len(pieces); id++ {
		p := pieces[id]
		for k := range p { // k: the byte offset of each code point
			if k == 0 {
				continue
			}
			a, b := p[:k], p[k:]
			if _, ok := ids[a]; !ok {
				continue
			}
			if _, ok := ids[b]; !ok {
				continue
			}
			ms = append(ms, merge{t.Scores[id], id, k, a + " " + b})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].score != ms[j].score {
			return ms[i].score > ms[j].score
		}
		if ms[i].id != ms[j].id {
			return ms[i].id < ms[j].id
		}
		return ms[i].split < ms[j].split
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.text
	}
	return out
}

// WriteTokenizer writes dir/tokenizer.json (a SentencePiece-style BPE with
// byte_fallback, like Llama-2's: normalizer Prepend "▁" + Replace " " -> "▁",
// no pre-tokenizer, the Llama-2 decoder) and dir/tokenizer_config.json
// (bos "<s>", eos "</s>", add_bos_token true).
func WriteTokenizer(dir string, t *Tokenizer) error {
	pieces, err := t.HFPieces()
	if err != nil {
		return err
	}
	added := []map[string]any{}
	for id, content := range []string{"<unk>", "<s>", "</s>"} {
		added = append(added, map[string]any{
			"id": id, "content": content, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true,
		})
	}
	doc := tokenizerJSON{
		Version:     "1.0",
		AddedTokens: added,
		Normalizer: map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		Decoder: map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		Model: bpeJSON{
			Type: "BPE", UnkToken: "<unk>", FuseUnk: true, ByteFallback: true,
			Vocab: orderedVocab(pieces), Merges: t.Merges(pieces),
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	cfg, _ := json.MarshalIndent(map[string]any{
		"tokenizer_class": "LlamaTokenizer",
		"bos_token":       "<s>",
		"eos_token":       "</s>",
		"unk_token":       "<unk>",
		"add_bos_token":   true,
		"add_eos_token":   false,
	}, "", "  ")
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), append(cfg, '\n'), 0o644)
}

type tokenizerJSON struct {
	Version       string           `json:"version"`
	Truncation    any              `json:"truncation"`
	Padding       any              `json:"padding"`
	AddedTokens   []map[string]any `json:"added_tokens"`
	Normalizer    any              `json:"normalizer"`
	PreTokenizer  any              `json:"pre_tokenizer"`
	PostProcessor any              `json:"post_processor"`
	Decoder       any              `json:"decoder"`
	Model         bpeJSON          `json:"model"`
}

type bpeJSON struct {
	Type                    string       `json:"type"`
	Dropout                 any          `json:"dropout"`
	UnkToken                string       `json:"unk_token"`
	ContinuingSubwordPrefix any          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         any          `json:"end_of_word_suffix"`
	FuseUnk                 bool         `json:"fuse_unk"`
	ByteFallback            bool         `json:"byte_fallback"`
	IgnoreMerges            bool         `json:"ignore_merges"`
	Vocab                   orderedVocab `json:"vocab"`
	Merges                  []string     `json:"merges"`
}

// orderedVocab marshals as a JSON object {piece: id} in id order.
type orderedVocab []string

func (v orderedVocab) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for id, p := range v {
		if id > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		fmt.Fprintf(&b, ":%d", id)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
