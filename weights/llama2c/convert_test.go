package llama2c

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/tokenizer"
)

// realFiles returns the paths of stories15M's model.bin and tokenizer.bin,
// failing the test when setup.sh has not fetched them.
func realFiles(t *testing.T) (string, string) {
	t.Helper()
	dir, _ := os.Getwd()
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
	}
	raw := filepath.Join(dir, ".wspec", "models", "stories15M-llama2c")
	model, tok := filepath.Join(raw, "model.bin"), filepath.Join(raw, "tokenizer.bin")
	for _, p := range []string{model, tok} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run ./setup.sh (%v)", p, err)
		}
	}
	return model, tok
}

// llama2cEncode is llama2.c's encode() on tokenizer.bin, by score: BOS, a
// dummy " " when the text is not empty, each code point's piece or its bytes
// as byte tokens (id = byte + 3), then repeatedly merge the adjacent pair whose
// concatenation is a piece with the highest score (leftmost on a tie).
//
// The byte tokens 3..258 are taken by position, as stories15M.md says: this
// tokenizer.bin stores them as raw bytes (Latin-1 characters as UTF-8), where
// upstream llama2.c's export writes "<0xXX>"; lookups must not find them, or
// "," would become the byte token 47 and "¿" (when not a piece) a single
// byte token instead of its two UTF-8 bytes.
func llama2cEncode(tok *Tokenizer, text string) []int {
	pieces := slices.Clone(tok.Pieces)
	for b := 0; b < 256; b++ {
		pieces[FirstByteToken+b] = []byte(fmt.Sprintf("<0x%02X>", b))
	}
	lookup := map[string]int{}
	for id, p := range pieces {
		if _, dup := lookup[string(p)]; !dup {
			lookup[string(p)] = id
		}
	}
	ids := []int{BOS}
	if text != "" {
		ids = append(ids, lookup[" "])
	}
	for _, r := range text {
		if id, ok := lookup[string(r)]; ok {
			ids = append(ids, id)
			continue
		}
		for _, b := range []byte(string(r)) {
			ids = append(ids, int(b)+FirstByteToken)
		}
	}
	for {
		best, bestID, bestIdx := float32(-1e10), -1, -1
		for i := 1; i+1 < len(ids); i++ { // ids[0] is BOS, never merged
			s := string(pieces[ids[i]]) + string(pieces[ids[i+1]])
			if id, ok := lookup[s]; ok && tok.Scores[id] > best {
				best, bestID, bestIdx = tok.Scores[id], id, i
			}
		}
		if bestIdx < 0 {
			return ids
		}
		ids[bestIdx] = bestID
		ids = append(ids[:bestIdx+1], ids[bestIdx+2:]...)
	}
}

func TestConvertStories15M(t *testing.T) {
	modelBin, tokBin := realFiles(t)
	out := t.TempDir()
	if err := Convert(modelBin, tokBin, out, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := weights.LoadConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	want := &weights.Config{Arch: "llama", Dim: 288, HiddenDim: 768, NLayers: 6, NHeads: 6, NKVHeads: 6, HeadDim: 48,
		Vocab: 32000, MaxSeq: 256, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true, BOS: 1, EOS: []int{1, 2}}
	if !equalConfig(cfg, want) {
		t.Fatalf("config %+v", cfg)
	}
	ck, err := weights.OpenCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if err := cfg.CheckTensors(ck); err != nil {
		t.Fatal(err)
	}
	if ck.Has(weights.LMHeadTensorName) {
		t.Fatal("lm_head written for a shared classifier")
	}
	// Spot-check against the raw file: the embedding, and the RoPE
	// permutation of layer 5's wk (HF row 30 of head 2 = llama2.c row 96+2*(30-24)+1).
	mc, sec, err := readSections(modelBin)
	if err != nil {
		t.Fatal(err)
	}
	emb, _ := ck.Tensor(weights.EmbedTensorName)
	if !bytes.Equal(emb.Data, sec["token_embedding"]) {
		t.Fatal("embedding differs")
	}
	wk, _ := ck.Tensor(weights.LayerTensorName(5, weights.WkSuffix))
	row := 4 * mc.Dim
	layer := sec["wk"][5*mc.Dim*row : 6*mc.Dim*row]
	if !bytes.Equal(wk.Data[(96+30)*row:(96+31)*row], layer[(96+13)*row:(96+14)*row]) {
		t.Fatal("wk rows not permuted as expected")
	}

	tok, err := tokenizer.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 32000 || tok.BOS() != 1 || !slices.Equal(tok.EOS(), []int{2}) || !tok.AddBOS() {
		t.Fatalf("tokenizer vocab %d bos %d eos %v", tok.VocabSize(), tok.BOS(), tok.EOS())
	}
	if got := tok.Encode("Once upon a time", true); !slices.Equal(got, []int{1, 9038, 2501, 263, 931}) {
		t.Fatalf("Once upon a time -> %v", got)
	}
	raw, err := ReadTokenizer(tokBin, 32000)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"Once upon a time", "Hello, world!", "café 日本", "line one\nline two\n\nend", "Lily said, \"Let's play!\"",
		"  two  spaces", "tabs\tand\r\nreturns", "emoji 🙂 and ümlauts", "123 4567.89", "", "a", " ",
		"The quick brown fox jumps over the lazy dog; naïve résumé — “quotes”.",
	} {
		got, ref := tok.Encode(text, true), llama2cEncode(raw, text)
		if !slices.Equal(got, ref) {
			t.Errorf("Encode(%q) = %v, llama2.c gives %v", text, got, ref)
		}
		if dec := tok.Decode(got); dec != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, dec)
		}
	}
	if got := tok.Encode("Hello, world!", false); !slices.Contains(got, 29892) || slices.Contains(got, 47) {
		t.Errorf("the comma should be the piece 29892, not the byte token 47: %v", got)
	}

	// Streaming a story the way llama2.c prints it: no space after BOS, the
	// story's end (BOS again) prints nothing.
	ids := append(tok.Encode("Once upon a time, 日本", true), 1)
	ids = append(ids, tok.Encode("The end", false)...)
	d := tokenizer.NewStreamDecoder(tok)
	var s string
	for _, id := range ids {
		piece := d.Push(id)
		if !utf8.ValidString(piece) {
			t.Fatalf("invalid UTF-8 %q", piece)
		}
		s += piece
	}
	s += d.Flush()
	if s != "Once upon a time, 日本The end" {
		t.Errorf("stream %q", s)
	}
}

func equalConfig(a, b *weights.Config) bool {
	return a.Arch == b.Arch && a.Dim == b.Dim && a.HiddenDim == b.HiddenDim && a.NLayers == b.NLayers &&
		a.NHeads == b.NHeads && a.NKVHeads == b.NKVHeads && a.HeadDim == b.HeadDim && a.Vocab == b.Vocab &&
		a.MaxSeq == b.MaxSeq && a.RopeTheta == b.RopeTheta && a.RopeScaling == b.RopeScaling && a.RMSEps == b.RMSEps &&
		a.TieEmbed == b.TieEmbed && a.AttnBias == b.AttnBias && a.BOS == b.BOS && slices.Equal(a.EOS, b.EOS)
}

// writeTinyModel writes a random model.bin (and a matching tokenizer.bin):
// dim 8, hidden 12, 2 layers, 2 heads, 1 kv head, vocab 300, seq 4, and an
// untied classifier when untied is set.
func writeTinyModel(t *testing.T, untied bool) (string, string, ModelConfig) {
	dir := t.TempDir()
	mc := ModelConfig{Dim: 8, HiddenDim: 12, NLayers: 2, NHeads: 2, NKVHeads: 1, Vocab: 300, SeqLen: 4, Shared: !untied}
	var b bytes.Buffer
	vocab := int32(mc.Vocab)
	if untied {
		vocab = -vocab
	}
	for _, v := range []int32{8, 12, 2, 2, 1, vocab, 4} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	n := int(mc.FileSize()-HeaderSize) / 4
	for i := 0; i < n; i++ {
		binary.Write(&b, binary.LittleEndian, float32(i%97)/97)
	}
	model := filepath.Join(dir, "model.bin")
	os.WriteFile(model, b.Bytes(), 0o644)

	b.Reset()
	binary.Write(&b, binary.LittleEndian, int32(6)) // max_token_length: "\n</s>\n"
	piece := func(score float32, s string) {
		binary.Write(&b, binary.LittleEndian, score)
		binary.Write(&b, binary.LittleEndian, int32(len(s)))
		b.WriteString(s)
	}
	piece(0, "<unk>")
	piece(0, "\n<s>\n")
	piece(0, "\n</s>\n")
	for i := 0; i < 256; i++ {
		piece(0, string(rune(i))) // Latin-1 as UTF-8, like the real file
	}
	words := []string{" ", "a", "b", "c", " a", "ab", " ab", "  ", "bc", " abc", "ca"}
	for i := 0; len(words) < mc.Vocab-259; i++ {
		words = append(words, string(rune('d'+i%20))+string(rune('d'+i/20)))
	}
	for i, w := range words {
		piece(float32(-i), w)
	}
	tok := filepath.Join(dir, "tokenizer.bin")
	os.WriteFile(tok, b.Bytes(), 0o644)
	return model, tok, mc
}

func TestConvertTinyUntiedGQA(t *testing.T) {
	model, tokBin, mc := writeTinyModel(t, true)
	if got, err := ReadModelConfig(model); err != nil || got != mc {
		t.Fatalf("ReadModelConfig = %+v, %v", got, err)
	}
	out := filepath.Join(t.TempDir(), "hf")
	if err := Convert(model, tokBin, out, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := weights.LoadConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TieEmbed || cfg.NKVHeads != 1 || cfg.HeadDim != 4 {
		t.Fatalf("config %+v", cfg)
	}
	ck, err := weights.OpenCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if err := cfg.CheckTensors(ck); err != nil {
		t.Fatal(err)
	}
	_, sec, _ := readSections(model)
	head, _ := ck.Tensor(weights.LMHeadTensorName)
	if !bytes.Equal(head.Data, sec["wcls"]) {
		t.Fatal("lm_head is not wcls")
	}
	w1, _ := ck.Tensor(weights.LayerTensorName(1, weights.GateSuffix))
	if !bytes.Equal(w1.Data, sec["w1"][4*12*8:]) {
		t.Fatal("gate_proj is not w1 of layer 1")
	}
	tok, err := tokenizer.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := ReadTokenizer(tokBin, mc.Vocab)
	for _, text := range []string{"abc", "ab c ca", "cab  abc", "é!"} {
		if got, ref := tok.Encode(text, true), llama2cEncode(raw, text); !slices.Equal(got, ref) {
			t.Errorf("Encode(%q) = %v, llama2.c gives %v", text, got, ref)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	model, tokBin, _ := writeTinyModel(t, false)
	b, _ := os.ReadFile(model)
	dir := t.TempDir()
	short := filepath.Join(dir, "short.bin")
	os.WriteFile(short, b[:len(b)-4], 0o644)
	if err := Convert(short, tokBin, t.TempDir(), false); !errors.Is(err, ErrFormat) {
		t.Errorf("truncated model.bin: %v", err)
	}
	badHdr := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(badHdr[12:], 3) // n_heads 3 does not divide dim 8
	os.WriteFile(short, badHdr, 0o644)
	if err := Convert(short, tokBin, t.TempDir(), false); !errors.Is(err, ErrFormat) {
		t.Errorf("bad header: %v", err)
	}
	tb, _ := os.ReadFile(tokBin)
	os.WriteFile(short, tb[:len(tb)-1], 0o644)
	if err := Convert(model, short, t.TempDir(), false); !errors.Is(err, ErrFormat) {
		t.Errorf("truncated tokenizer.bin: %v", err)
	}
	if _, err := ParseModelConfig([]byte{1, 2}); !errors.Is(err, ErrFormat) {
		t.Errorf("short header: %v", err)
	}
}

// TestPermuteRoPERows checks the claim behind the permutation: rotating the
// permuted projection by halves (Hugging Face) gives the permuted result of
// rotating the original by adjacent pairs (llama2.c), so q·k is unchanged.
func TestPermuteRoPERows(t *testing.T) {
	const hs, cols, heads, pos = 8, 5, 2, 3
	w := make([]float32, heads*hs*cols)
	for i := range w {
		w[i] = float32(math.Sin(float64(i) * 1.7))
	}
	x := []float32{0.3, -1, 2, 0.5, -0.25}
	project := func(w []float32) []float32 {
		out := make([]float32, heads*hs)
		for r := range out {
			for c := 0; c < cols; c++ {
				out[r] += w[r*cols+c] * x[c]
			}
		}
		return out
	}
	theta := func(i int) float64 { return pos / math.Pow(10000, float64(2*i)/hs) }
	q := project(w)
	for h := 0; h < heads; h++ { // llama2.c: pairs (2i, 2i+1)
		for i := 0; i < hs/2; i++ {
			a, b := float64(q[h*hs+2*i]), float64(q[h*hs+2*i+1])
			c, s := math.Cos(theta(i)), math.Sin(theta(i))
			q[h*hs+2*i], q[h*hs+2*i+1] = float32(a*c-b*s), float32(a*s+b*c)
		}
	}
	wb := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(wb[4*i:], math.Float32bits(v))
	}
	pb := PermuteRoPERows(wb, cols, hs, 4)
	pw := make([]float32, len(w))
	for i := range pw {
		pw[i] = math.Float32frombits(binary.LittleEndian.Uint32(pb[4*i:]))
	}
	p := project(pw)
	for h := 0; h < heads; h++ { // Hugging Face: halves (i, i+hs/2)
		for i := 0; i < hs/2; i++ {
			a, b := float64(p[h*hs+i]), float64(p[h*hs+i+hs/2])
			c, s := math.Cos(theta(i)), math.Sin(theta(i))
			p[h*hs+i], p[h*hs+i+hs/2] = float32(a*c-b*s), float32(a*s+b*c)
		}
	}
	for h := 0; h < heads; h++ {
		for j := 0; j < hs; j++ {
			src := 2 * j
			if j >= hs/2 {
				src = 2*(j-hs/2) + 1
			}
			if d := p[h*hs+j] - q[h*hs+src]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("head %d row %d: %v vs %v", h, j, p[h*hs+j], q[h*hs+src])
			}
		}
	}
}
