package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// spTokenizerJSON is a tiny Llama-2 style tokenizer.json: <unk>, <s>, </s>,
// 256 byte tokens, then a few pieces.
func spTokenizerJSON() []byte {
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := 0; b < 256; b++ {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 3 + b
	}
	pieces := []string{"▁", "a", "b", "c", "é", "▁a", "ab", "▁ab", "▁▁", "▁c", "abc", "▁abc"}
	for i, p := range pieces {
		vocab[p] = 259 + i
	}
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<unk>", "special": true},
			{"id": 1, "content": "<s>", "special": true},
			{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"model": map[string]any{
			"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
			"vocab":  vocab,
			"merges": []string{"▁ a", "a b", "▁a b", "ab c", "▁ab c", "▁ ▁", "▁ c"},
		},
	}
	b, _ := json.Marshal(doc)
	return b
}

// byteLevelTokenizerJSON is a tiny GPT-2 style tokenizer.json: the 256 byte
// characters, a few merges, and two special added tokens.
func byteLevelTokenizerJSON(preTokenizer any) []byte {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	merges := [][]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"},
		{"Ġw", "or"}, {"Ġwor", "l"}, {"Ġworl", "d"}, {"Ã", "©"}, {"Ġ", "Ġ"}}
	for _, m := range merges {
		vocab[m[0]+m[1]] = len(vocab)
	}
	n := len(vocab)
	doc := map[string]any{
		"added_tokens": []map[string]any{
			{"id": n, "content": "<|endoftext|>", "special": true},
			{"id": n + 1, "content": "<|im_start|>", "special": true},
			{"id": n + 2, "content": "<|im_start|>user", "special": false},
		},
		"normalizer":    map[string]any{"type": "NFC"},
		"pre_tokenizer": preTokenizer,
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "byte_fallback": false},
	}
	b, _ := json.Marshal(doc)
	return b
}

var gpt2PreTokenizer = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}

const llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var llama3PreTokenizer = map[string]any{"type": "Sequence", "pretokenizers": []any{
	map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Pattern}, "behavior": "Isolated", "invert": false},
	map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
}}

func mustParseTokenizer(t testing.TB, tj []byte, tc string) *Tokenizer {
	t.Helper()
	var cfg []byte
	if tc != "" {
		cfg = []byte(tc)
	}
	tok, err := Parse(tj, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSentencePieceTokenizer(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileName), spTokenizerJSON(), 0o644)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Kind() != SentencePieceBPE || tok.BOS() != 1 || !slices.Equal(tok.EOS(), []int{2}) || !tok.AddBOS() || tok.VocabSize() != 271 {
		t.Fatalf("kind %v bos %d eos %v addBOS %v vocab %d", tok.Kind(), tok.BOS(), tok.EOS(), tok.AddBOS(), tok.VocabSize())
	}
	id := func(p string) int {
		i, ok := tok.TokenID(p)
		if !ok {
			t.Fatalf("no token %q", p)
		}
		return i
	}
	cases := []struct {
		text string
		want []int
	}{
		{"abc", []int{1, id("▁abc")}},
		{"ab c", []int{1, id("▁ab"), id("▁c")}},
		{"", []int{1}},
		{" a", []int{1, id("▁"), id("▁a")}}, // "▁ a" ranks before "▁ ▁"
		{"é日", []int{1, id("▁"), id("é"), 3 + 0xE6, 3 + 0x97, 3 + 0xA5}},
		{"a</s>b", []int{1, id("▁a"), 2, id("b")}},
	}
	for _, c := range cases {
		got := tok.Encode(c.text, true)
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
		if dec := tok.Decode(got); dec != strings.ReplaceAll(c.text, "</s>", "") {
			t.Errorf("Decode(%v) = %q, want %q", got, dec, c.text)
		}
	}
	if got := tok.Encode("abc", false); !slices.Equal(got, []int{id("▁abc")}) {
		t.Errorf("without BOS: %v", got)
	}
	if tok.Piece(id("▁ab")) != "▁ab" || tok.Piece(-1) != "" || tok.Piece(1e6) != "" {
		t.Errorf("Piece")
	}

	// Streaming: the space after BOS goes, a character split over byte
	// tokens comes out whole, invalid bytes become U+FFFD.
	d := NewStreamDecoder(tok)
	var outs []string
	for _, i := range []int{1, id("▁ab"), id("▁c"), 3 + 0xE6, 3 + 0x97, 3 + 0xA5, 1, id("▁"), id("a"), 3 + 0xE6, id("b")} {
		outs = append(outs, d.Push(i))
	}
	outs = append(outs, d.Flush())
	want := []string{"", "ab", " c", "", "", "日", "", "", "a", "", "\uFFFDb", ""}
	if !slices.Equal(outs, want) {
		t.Errorf("stream %q, want %q", outs, want)
	}
	// The first piece of a stream keeps its space (it continues a prompt).
	d = NewStreamDecoder(tok)
	if s := d.Push(id("▁ab")) + d.Push(3+0xC3) + d.Flush(); s != " ab\uFFFD" {
		t.Errorf("stream without BOS: %q", s)
	}
}

func TestByteLevelTokenizer(t *testing.T) {
	for _, pre := range []any{gpt2PreTokenizer, llama3PreTokenizer} {
		tok := mustParseTokenizer(t, byteLevelTokenizerJSON(pre), `{"bos_token":null,"eos_token":{"content":"<|endoftext|>"},"add_bos_token":false}`)
		if tok.Kind() != ByteLevelBPE || tok.BOS() != -1 || tok.AddBOS() {
			t.Fatalf("kind %v bos %d", tok.Kind(), tok.BOS())
		}
		eos, _ := tok.TokenID("<|endoftext|>")
		if !slices.Equal(tok.EOS(), []int{eos}) {
			t.Fatalf("eos %v", tok.EOS())
		}
		id := func(p string) int {
			i, ok := tok.TokenID(p)
			if !ok {
				t.Fatalf("no token %q", p)
			}
			return i
		}
		got := tok.Encode("hello world<|endoftext|>", true)
		if want := []int{id("hello"), id("Ġworld"), eos}; !slices.Equal(got, want) {
			t.Errorf("Encode = %v, want %v", got, want)
		}
		got = tok.Encode("<|im_start|>user hé", false) // longest added token wins
		if want := []int{id("<|im_start|>user"), id("Ġ"), id("h"), id("Ã©")}; !slices.Equal(got, want) {
			t.Errorf("Encode = %v, want %v", got, want)
		}
		if s := tok.Decode(got); s != "<|im_start|>user hé" {
			t.Errorf("Decode = %q", s)
		}
		for _, s := range []string{"hello  world\n\n", "tab\there's 12345 ünïcödé 日本語 🙂!!", "  lead", "x\r\n y "} {
			if d := tok.Decode(tok.Encode(s, false)); d != s {
				t.Errorf("round trip %q -> %q", s, d)
			}
		}
		// A character split over byte tokens streams out whole.
		d := NewStreamDecoder(tok)
		var outs []string
		for _, b := range []byte("日x") {
			outs = append(outs, d.Push(int(b)))
		}
		if want := []string{"", "", "日", "x"}; !slices.Equal(outs, want) {
			t.Errorf("stream %q, want %q", outs, want)
		}
		if s := tok.Decode([]int{id("<|endoftext|>"), id("Ġworld"), 0xE6, -5, 1 << 30}); s != " world\uFFFD" {
			t.Errorf("Decode with special/invalid: %q", s)
		}
	}
}

func TestPreTokenizerSplits(t *testing.T) {
	gpt2, err := newSplitter(gpt2Pattern, "Isolated")
	if err != nil {
		t.Fatal(err)
	}
	llama3, err := newSplitter(llama3Pattern, "Isolated")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		s        *splitter
		text     string
		expected []string
	}{
		{gpt2, "Hello world", []string{"Hello", " world"}},
		{gpt2, "Hello  world", []string{"Hello", " ", " world"}},
		{gpt2, "it's 2024!!", []string{"it", "'s", " 2024", "!!"}},
		{gpt2, "x  ", []string{"x", "  "}},
		{gpt2, "a \n b", []string{"a", " \n", " b"}},
		{gpt2, "a\t\tb", []string{"a", "\t", "\t", "b"}},
		{gpt2, "a\u00a0\u00a0b", []string{"a", "\u00a0", "\u00a0", "b"}},
		{llama3, "Hello\n\n\nworld", []string{"Hello", "\n\n\n", "world"}},
		{llama3, "  \n  x", []string{"  \n", " ", " x"}},
		{llama3, "12345 IT'S", []string{"123", "45", " IT", "'S"}},
		{llama3, "a...\n\nb", []string{"a", "...\n\n", "b"}},
		{llama3, "(hi)", []string{"(hi", ")"}},
	}
	for _, c := range cases {
		if got := c.s.pieces(c.text); !slices.Equal(got, c.expected) {
			t.Errorf("split %q = %q, want %q", c.text, got, c.expected)
		}
	}
	if _, err := newSplitter(`a(?=b)`, "Isolated"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("lookahead accepted: %v", err)
	}
}

func TestTokenizerErrors(t *testing.T) {
	base := func(mut func(m map[string]any)) []byte {
		var doc map[string]any
		json.Unmarshal(spTokenizerJSON(), &doc)
		mut(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	model := func(doc map[string]any) map[string]any { return doc["model"].(map[string]any) }
	cases := []struct {
		name string
		tj   []byte
		tc   string
		want error
	}{
		{"bad JSON", []byte(`{"model":`), "", ErrBad},
		{"unigram", base(func(d map[string]any) { model(d)["type"] = "Unigram" }), "", ErrUnsupported},
		{"merge out of vocab", base(func(d map[string]any) { model(d)["merges"] = []string{"x y"} }), "", ErrBad},
		{"merge without space", base(func(d map[string]any) { model(d)["merges"] = []string{"ab"} }), "", ErrBad},
		{"negative id", base(func(d map[string]any) { model(d)["vocab"].(map[string]any)["zz"] = -1 }), "", ErrBad},
		{"huge id", base(func(d map[string]any) { model(d)["vocab"].(map[string]any)["zz"] = 1 << 30 }), "", ErrBad},
		{"duplicate id", base(func(d map[string]any) { model(d)["vocab"].(map[string]any)["zz"] = 5 }), "", ErrBad},
		{"unknown normalizer", base(func(d map[string]any) { d["normalizer"] = map[string]any{"type": "Lowercase"} }), "", ErrUnsupported},
		{"unknown pre-tokenizer", base(func(d map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "BertPreTokenizer"} }), "", ErrUnsupported},
		{"bad unk", base(func(d map[string]any) { model(d)["unk_token"] = "<nope>" }), "", ErrBad},
		{"bad bos in config", spTokenizerJSON(), `{"bos_token":"<nope>"}`, ErrBad},
		{"bad config JSON", spTokenizerJSON(), `{"bos_token":`, ErrBad},
		{"plain BPE", base(func(d map[string]any) { d["normalizer"] = nil; model(d)["byte_fallback"] = false }), "", ErrUnsupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg []byte
			if c.tc != "" {
				cfg = []byte(c.tc)
			}
			if _, err := Parse(c.tj, cfg); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing tokenizer.json: %v", err)
	}
}

// idsFromBytes reads fuzz bytes as ids: two bytes each, spread a little
// beyond the vocabulary (and below zero) so invalid ids are exercised.
func idsFromBytes(b []byte, vocab int) []int {
	var ids []int
	for i := 0; i+1 < len(b); i += 2 {
		v := int(b[i])<<8 | int(b[i+1])
		ids = append(ids, v%(vocab+8)-4)
	}
	return ids
}

func FuzzStreamDecoder(f *testing.F) {
	sp := mustParseTokenizer(f, spTokenizerJSON(), "")
	bl := mustParseTokenizer(f, byteLevelTokenizerJSON(gpt2PreTokenizer), "")
	f.Add([]byte{0, 5, 0, 1, 0, 233, 0, 158, 0, 168, 1, 10}, false)
	f.Add([]byte{0, 0xe6, 0, 0x97, 0, 0xa5, 0, 0xff, 1, 2}, true)
	f.Fuzz(func(t *testing.T, b []byte, byteLevel bool) {
		tok := sp
		if byteLevel {
			tok = bl
		}
		ids := idsFromBytes(b, tok.VocabSize())
		d := NewStreamDecoder(tok)
		var all strings.Builder
		if tok.BOS() >= 0 {
			all.WriteString(d.Push(tok.BOS()))
		}
		for _, id := range ids {
			s := d.Push(id)
			if !utf8.ValidString(s) {
				t.Fatalf("Push(%d) = %q, not UTF-8", id, s)
			}
			all.WriteString(s)
		}
		all.WriteString(d.Flush())
		if dec := tok.Decode(ids); dec != all.String() {
			t.Fatalf("Decode %q != stream %q", dec, all.String())
		}
	})
}

func FuzzDecode(f *testing.F) {
	sp := mustParseTokenizer(f, spTokenizerJSON(), "")
	bl := mustParseTokenizer(f, byteLevelTokenizerJSON(llama3PreTokenizer), "")
	for _, s := range []string{"hello world", "abc ab  c", "é日本 🙂\n\n", " lead  trail ", "it's 12345!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range []*Tokenizer{sp, bl} {
			ids := tok.Encode(s, true)
			dec := tok.Decode(ids)
			if !utf8.ValidString(dec) {
				t.Fatalf("Decode gave invalid UTF-8 %q", dec)
			}
			plain := !strings.Contains(s, "<s>") && !strings.Contains(s, "</s>") && !strings.Contains(s, "<unk>") &&
				!strings.Contains(s, "<|endoftext|>") && !strings.Contains(s, "<|im_start|>")
			if utf8.ValidString(s) && plain && dec != s {
				t.Fatalf("%v: %q -> %v -> %q", tok.Kind(), s, ids, dec)
			}
		}
	})
}

func TestByteLevelIgnoreMergesAndTemplateBOS(t *testing.T) {
	var doc map[string]any
	json.Unmarshal(byteLevelTokenizerJSON(llama3PreTokenizer), &doc)
	model := doc["model"].(map[string]any)
	vocab := model["vocab"].(map[string]any)
	vocab["xyz"] = 500 // reachable only as a whole word: no merges build it
	model["ignore_merges"] = true
	doc["post_processor"] = map[string]any{"type": "Sequence", "processors": []any{
		map[string]any{"type": "ByteLevel"},
		map[string]any{"type": "TemplateProcessing", "single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "<|im_start|>", "type_id": 0}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
		}},
	}}
	b, _ := json.Marshal(doc)
	tok := mustParseTokenizer(t, b, "")
	bos, _ := tok.TokenID("<|im_start|>")
	if tok.BOS() != bos || !tok.AddBOS() {
		t.Fatalf("bos %d (want %d), addBOS %v", tok.BOS(), bos, tok.AddBOS())
	}
	// " xyz" is not in the vocabulary, so it is merged from its bytes (the
	// test vocabulary gives byte b's character the id b).
	if got, want := tok.Encode("xyz xyz", true), []int{bos, 500, ' ', 'x', 'y', 'z'}; !slices.Equal(got, want) {
		t.Fatalf("Encode = %v, want %v", got, want)
	}
	model["ignore_merges"] = false
	b, _ = json.Marshal(doc)
	tok = mustParseTokenizer(t, b, "")
	if got := tok.Encode("xyz", false); !slices.Equal(got, []int{'x', 'y', 'z'}) {
		t.Fatalf("without ignore_merges: %v", got)
	}
}

// A tokenizer.json that declares the NFC normalizer (Qwen2.5's, Qwen3's) composes its input
// first, as Hugging Face does: a decomposed "e" + U+0301 is tokenized as the composed "é";
// without the normalizer the two differ.
func TestNFCNormalizer(t *testing.T) {
	nfc, err := Parse(byteLevelTokenizerJSON(gpt2PreTokenizer), nil)
	if err != nil {
		t.Fatal(err)
	}
	composed, decomposed := "café <|endoftext|>café", "cafe\u0301 <|endoftext|>cafe\u0301"
	want := nfc.Encode(composed, false)
	if got := nfc.Encode(decomposed, false); !slices.Equal(got, want) {
		t.Errorf("NFC: decomposed %v, composed %v", got, want)
	}
	var doc map[string]any
	if err := json.Unmarshal(byteLevelTokenizerJSON(gpt2PreTokenizer), &doc); err != nil {
		t.Fatal(err)
	}
	doc["normalizer"] = nil
	b, _ := json.Marshal(doc)
	raw, err := Parse(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.Encode(decomposed, false); slices.Equal(got, want) {
		t.Errorf("no normalizer: the decomposed text tokenized as the composed one (%v)", got)
	}
	if got := raw.Encode(composed, false); !slices.Equal(got, want) {
		t.Errorf("no normalizer: composed %v, with NFC %v", got, want)
	}
}

// Each Split behavior cuts at the matches as Hugging Face's does, and a Sequence of Splits
// splits every piece of the one before.
func TestSplitBehaviors(t *testing.T) {
	text := " a  b c "
	for _, c := range []struct {
		behavior string
		want     []string
	}{
		{"Isolated", []string{" ", "a", " ", " ", "b", " ", "c", " "}},
		{"MergedWithPrevious", []string{" ", "a ", " ", "b ", "c "}},
		{"MergedWithNext", []string{" a", " ", " b", " c", " "}},
		{"Removed", []string{"a", "b", "c"}},
	} {
		s, err := newSplitter(" ", c.behavior)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.pieces(text); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.behavior, got, c.want)
		}
	}
	if _, err := newSplitter(" ", "Contiguous"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("behavior Contiguous: %v, want ErrUnsupported", err)
	}
	digits, _ := newSplitter(`\p{N}{1,3}`, "Isolated")
	words, _ := newSplitter(`[a-z]+`, "Isolated")
	if got, want := (splitChain{digits, words}).pieces("ab12345cd e"), []string{"ab", "123", "45", "cd", " ", "e"}; !slices.Equal(got, want) {
		t.Errorf("chain: %q, want %q", got, want)
	}
}

// Digits (SmolLM2's and StarCoder's pre-tokenizer, before ByteLevel's own split) isolates each
// digit, or each run of digits, Unicode's N categories included.
func TestDigitsPreTokenizer(t *testing.T) {
	for _, c := range []struct {
		individual bool
		text       string
		want       []string
	}{
		{true, "it's 2024!!", []string{"it", "'s", " ", "2", "0", "2", "4", "!!"}},
		{true, "x٣4", []string{"x", "٣", "4"}},
		{false, "it's 2024!!", []string{"it", "'s", " ", "2024", "!!"}},
	} {
		var p pipeline
		seq := &componentJSON{Type: "Sequence", PreTokenizers: []*componentJSON{
			{Type: "Digits", IndividualDigits: c.individual}, {Type: "ByteLevel"}}}
		if err := p.preTokenizer(seq); err != nil {
			t.Fatal(err)
		}
		var chain splitChain
		for _, sp := range p.splits {
			s, err := newSplitter(sp.pattern, sp.behavior)
			if err != nil {
				t.Fatal(err)
			}
			chain = append(chain, s)
		}
		if got := chain.pieces(c.text); !slices.Equal(got, c.want) {
			t.Errorf("individual %v: %q split %q, want %q", c.individual, c.text, got, c.want)
		}
	}
}
