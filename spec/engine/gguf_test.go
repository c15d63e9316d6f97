package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/hf2gguf"
	"github.com/wspec/wspec/weights/synth"
)

// A checkpoint written as a Hugging Face folder and as a GGUF file (F32 and F16) loads both
// ways into the same model: the same tokens for a prompt, the same greedy text, log-probabilities
// within rounding; llama's q/k permutation and llama3's rope_freqs are undone, Gemma's norms
// shifted back, a tied head found, linear rope scaling read back from its keys.
func TestGGUFModelMatchesFolder(t *testing.T) {
	shapes := map[string]weights.Config{
		"llama3": {Arch: "llama", Dim: 64, HiddenDim: 128, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
			Vocab: 300, MaxSeq: 512, RopeTheta: 500000, RMSEps: 1e-5, TieEmbed: true, BOS: 298, EOS: []int{299},
			RopeScaling: &weights.RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 64}},
		"qwen2": {Arch: "qwen2", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 1, HeadDim: 16,
			Vocab: 300, MaxSeq: 512, RopeTheta: 1e6, RMSEps: 1e-6, AttnBias: true, BOS: -1, EOS: []int{299}},
		"gemma3": {Arch: "gemma3_text", Dim: 64, HiddenDim: 96, NLayers: 6, NHeads: 2, NKVHeads: 1, HeadDim: 32,
			Vocab: 300, MaxSeq: 512, RopeTheta: 1e6, RMSEps: 1e-6, TieEmbed: true, BOS: 298, EOS: []int{299},
			QKNorm: true, NormPlusOne: true, GeluTanh: true, PostNorms: true, EmbedScale: 8, AttnScale: 1 / math.Sqrt(32),
			SlidingWindow: 6, SlidingLayers: []bool{true, true, true, true, true, false}, RopeLocalTheta: 10000,
			RopeScaling: &weights.RopeScaling{Linear: true, Factor: 8}}, // as Gemma 3 4B's global layers
	}
	prompt := "The cat sat on the mat"
	for name, cfg := range shapes {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hf")
			if err := synth.Write(dir, cfg, synth.Options{DType: weights.F16, Seed: 2}); err != nil {
				t.Fatal(err)
			}
			run := func(path string) *Result {
				e, err := Load(path, Options{Device: testDevice(t), DType: "f32", KVCacheDType: "f32"})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				res, err := e.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 16, IgnoreEOS: true,
					Sampling: Sampling{TopLogprobs: 5}})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			want := run(dir)
			for _, mt := range []hf2gguf.FileType{hf2gguf.FileF32, hf2gguf.FileF16} {
				file := filepath.Join(t.TempDir(), "m.gguf")
				if err := hf2gguf.Convert(dir, file, hf2gguf.Options{FileType: mt}); err != nil {
					t.Fatal(err)
				}
				got := run(file)
				if !slices.Equal(got.PromptTokens, want.PromptTokens) || !slices.Equal(got.Tokens, want.Tokens) {
					t.Fatalf("%v GGUF: prompt %v, tokens %v; the folder's %v, %v", mt, got.PromptTokens, got.Tokens, want.PromptTokens, want.Tokens)
				}
				for i := range want.Logprobs {
					if d := math.Abs(float64(got.Logprobs[i].Logprob - want.Logprobs[i].Logprob)); d > 1e-4 {
						t.Fatalf("%v GGUF: token %d's log-probability %v, the folder's %v", mt, i, got.Logprobs[i].Logprob, want.Logprobs[i].Logprob)
					}
				}
			}
		})
	}
}

// Broken GGUF files are refused with a clear error: not GGUF, truncated, an unknown
// architecture, and (not yet read) quantized tensors.
func TestGGUFModelRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 1, NHeads: 4, NKVHeads: 4, HeadDim: 16,
		Vocab: 300, MaxSeq: 512, RopeTheta: 10000, RMSEps: 1e-5, BOS: -1, EOS: []int{299}}
	hf := filepath.Join(dir, "hf")
	if err := synth.Write(hf, cfg, synth.Options{}); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.gguf")
	if err := hf2gguf.Convert(hf, good, hf2gguf.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// The same file with one matrix in Q8_0.
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	var tensors []gguf.Tensor
	for _, ti := range f.Tensors {
		_, data, _ := f.Tensor(ti.Name)
		nt := gguf.Tensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Write: gguf.Bytes(data)}
		if ti.Name == "blk.0.ffn_up.weight" {
			size, _ := gguf.Q8_0.RowBytes(ti.Elements())
			nt.Type, nt.Write = gguf.Q8_0, gguf.Bytes(make([]byte, size))
		}
		tensors = append(tensors, nt)
	}
	quant := filepath.Join(dir, "q8.gguf")
	if err := gguf.WriteFile(quant, f.KV, tensors); err != nil {
		t.Fatal(err)
	}
	// Then with that matrix's type made Q2_K (ggml type 10), which wspec does not read.
	q, err := os.ReadFile(quant)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(q, []byte("blk.0.ffn_up.weight")) + len("blk.0.ffn_up.weight") + 4 + 16 // name, n_dims, 2 dims
	if binary.LittleEndian.Uint32(q[at:]) != uint32(gguf.Q8_0) {
		t.Fatalf("the tensor info is not where this test expects it")
	}
	binary.LittleEndian.PutUint32(q[at:], 10)
	cases := map[string]error{
		write("q2k.gguf", q): gguf.ErrUnknownType,
		write("junk.gguf", []byte("not a gguf file at all")): gguf.ErrMalformed,
		write("truncated.gguf", b[:len(b)/2]):                gguf.ErrMalformed,
		write("arch.gguf", replaceOnce(b, "llama", "llamb")): weights.ErrUnknownArch,
	}
	for path, want := range cases {
		if _, err := Load(path, Options{Device: testDevice(t)}); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", filepath.Base(path), err, want)
		}
	}
}

// replaceOnce replaces the first old in b (same length) with new.
func replaceOnce(b []byte, old, new string) []byte {
	out := slices.Clone(b)
	for i := 0; i+len(old) <= len(out); i++ {
		if string(out[i:i+len(old)]) == old {
			copy(out[i:], new)
			break
		}
	}
	return out
}

// A byte-level tokenizer of each pre-tokenizer llama.cpp names (gpt-2, llama-bpe, qwen2), written
// to GGUF and read back, tokenizes as the folder's tokenizer.json does; the pre-tokenizers
// differ (digits in threes, one by one, or whole) so a wrong mapping shows.
func TestGGUFTokenizerMatchesFolder(t *testing.T) {
	const (
		llama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
		qwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	)
	split := func(re string) any {
		return map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": re}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}}}
	}
	pres := map[string]any{
		"gpt-2":     map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"llama-bpe": split(llama3), "qwen2": split(qwen2),
	}
	texts := []string{"12345 and 678", "I'll say the thing\n\nthe end", "héllo wörld 42"}
	var seen [][]int
	for name, pre := range pres {
		dir := filepath.Join(t.TempDir(), "hf")
		cfg := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 1, NHeads: 4, NKVHeads: 4, HeadDim: 16,
			Vocab: 300, MaxSeq: 512, RopeTheta: 10000, RMSEps: 1e-5, BOS: -1, EOS: []int{299}}
		tokFile := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(tokFile, byteLevelWithMerges(t, pre), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := synth.Write(dir, cfg, synth.Options{Tokenizer: tokFile}); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "m.gguf")
		if err := hf2gguf.Convert(dir, file, hf2gguf.Options{}); err != nil {
			t.Fatal(err)
		}
		folder, err := weights.OpenModel(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer folder.Close()
		g, err := weights.OpenModel(file)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		var all []int
		for _, s := range texts {
			want, got := folder.Tokenizer.Encode(s, true), g.Tokenizer.Encode(s, true)
			if !slices.Equal(got, want) {
				t.Errorf("%s %q: GGUF %v, folder %v", name, s, got, want)
			}
			all = append(all, want...)
		}
		seen = append(seen, all)
	}
	if slices.Equal(seen[0], seen[1]) && slices.Equal(seen[1], seen[2]) {
		t.Error("the three pre-tokenizers tokenize alike: the test cannot tell them apart")
	}
}

// byteLevelWithMerges is a tokenizer.json of the 256 byte tokens, merges that join digits
// and "the", and pre-tokenizer pre.
func byteLevelWithMerges(t *testing.T, pre any) []byte {
	vocab := map[string]int{}
	runes := gpt2Bytes()
	for b, r := range runes {
		vocab[string(r)] = b
	}
	merges := []string{"1 2", "12 3", "4 5", "45 6", "6 7", "67 8", "Ġ t", "Ġt h", "Ġth e", "t h", "th e"}
	for _, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		vocab[a+b] = len(vocab)
	}
	doc := map[string]any{"version": "1.0", "added_tokens": []any{}, "normalizer": nil, "pre_tokenizer": pre,
		"post_processor": nil, "decoder": map[string]any{"type": "ByteLevel"},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gpt2Bytes is GPT-2's byte-to-character table.
func gpt2Bytes() []rune {
	out := make([]rune, 256)
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			out[b] = rune(b)
		} else {
			out[b] = rune(256 + n)
			n++
		}
	}
	return out
}

// The default model (a SentencePiece tokenizer, as Llama 2, Mistral and TinyLlama have) written
// as a GGUF file loads with the same tokenizer and model: the same prompt tokens for text with
// leading spaces, newlines, digits, non-ASCII and byte-fallback characters, and the same
// greedy tokens.
func TestGGUFSentencePieceMatchesFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "stories15M.gguf")
	if err := hf2gguf.Convert(storiesDir, file, hf2gguf.Options{FileType: hf2gguf.FileF32}); err != nil {
		t.Fatal(err)
	}
	folder, gg := stories(t, nil), func() *Engine {
		e, err := Load(file, Options{Device: testDevice(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}()
	for _, p := range []string{"Once upon a time", "  two spaces,\nnew line\tand tab", "Lily had 123 apples: é, ü, 日本, 🙂!", ""} {
		a, b := folder.Tokenizer().Encode(p, true), gg.Tokenizer().Encode(p, true)
		if !slices.Equal(a, b) {
			t.Errorf("%q: the GGUF tokenizer gives %v, the folder's %v", p, b, a)
		}
	}
	o := GenerateOptions{MaxTokens: 16, IgnoreEOS: true}
	if a, b := generate(t, folder, "Once upon a time", o), generate(t, gg, "Once upon a time", o); !slices.Equal(a.Tokens, b.Tokens) || a.Text != b.Text {
		t.Errorf("GGUF: %v %q; folder: %v %q", b.Tokens, b.Text, a.Tokens, a.Text)
	}
}
