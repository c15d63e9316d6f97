package weights_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/hf2gguf"
	"github.com/wspec/wspec/weights/synth"
)

// hostileGGUF converts a small random checkpoint (300 tokens) to GGUF, lets edit change its
// metadata, and writes the file again with the same tensors.
func hostileGGUF(t *testing.T, edit func(kvs []gguf.KV) []gguf.KV) string {
	t.Helper()
	cfg := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 1, NHeads: 4, NKVHeads: 2, HeadDim: 16,
		Vocab: 300, MaxSeq: 32, RopeTheta: 10000, RMSEps: 1e-5, BOS: 298, EOS: []int{299}}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(dir, cfg, synth.Options{DType: weights.F32, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "base.gguf")
	if err := hf2gguf.Convert(dir, base, hf2gguf.Options{FileType: hf2gguf.FileF32}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	kvs := make([]gguf.KV, len(f.KV))
	for i, kv := range f.KV {
		kvs[i] = kv
		if a, ok := kv.Value.(gguf.Array); ok {
			kvs[i].Value = gguf.Array{Type: a.Type, Values: a.Elements()}
		}
	}
	var ts []gguf.Tensor
	for _, ti := range f.Tensors {
		_, data, _ := f.Tensor(ti.Name)
		ts = append(ts, gguf.Tensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Write: gguf.Bytes(data)})
	}
	path := filepath.Join(t.TempDir(), "hostile.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := gguf.Write(out, edit(kvs), ts); err != nil {
		t.Fatal(err)
	}
	return path
}

// editTokens applies fn to tokenizer.ggml.tokens (and keeps token_type as long).
func editTokens(fn func([]string) []string) func([]gguf.KV) []gguf.KV {
	return func(kvs []gguf.KV) []gguf.KV {
		var n int
		for i, kv := range kvs {
			if kv.Key == "tokenizer.ggml.tokens" {
				toks := fn(kv.Value.(gguf.Array).Values.([]string))
				kvs[i].Value, n = gguf.Array{Type: gguf.TypeString, Values: toks}, len(toks)
			}
		}
		for i, kv := range kvs {
			if kv.Key == "tokenizer.ggml.token_type" {
				types := kv.Value.(gguf.Array).Values.([]int32)
				for len(types) < n {
					types = append(types, 1)
				}
				kvs[i].Value = gguf.Array{Type: gguf.TypeInt32, Values: types[:n]}
			}
		}
		return kvs
	}
}

// A GGUF vocabulary that would cost far more than its file to build is refused before it is
// built, naming what is wrong: a token of megabytes (building splits it at every byte), more
// tokens than the embedding has rows, tokens whose squared lengths add up past the bound.
func TestGGUFHostileVocabulary(t *testing.T) {
	for _, c := range []struct {
		name, want string
		edit       func([]string) []string
	}{
		{"a 4 MB token", "bytes long", func(ts []string) []string { ts[5] = strings.Repeat("a", 4<<20); return ts }},
		{"more tokens than rows", "more than the 300", func(ts []string) []string {
			for i := 0; i < 100000; i++ {
				ts = append(ts, "x")
			}
			return ts
		}},
		{"long tokens", "squared lengths", func(ts []string) []string {
			for i := range ts {
				ts[i] = strings.Repeat(string(rune('a'+i%26)), 1000-i%7) + string(rune(0x100+i))
			}
			return ts
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := weights.OpenModel(hostileGGUF(t, editTokens(c.edit)))
			if err == nil {
				m.Close()
				t.Fatal("loaded")
			}
			if !errors.Is(err, weights.ErrBadTokenizer) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrBadTokenizer naming %q", err, c.want)
			}
		})
	}
}

// A large metadata array that nothing reads costs no memory: it is skipped, not decoded (an
// unused 100 MB array once cost 3.55 GB).
func TestGGUFUnusedArrayCostsNothing(t *testing.T) {
	const size = 32 << 20
	path := hostileGGUF(t, func(kvs []gguf.KV) []gguf.KV {
		junk := make([]int32, size/4)
		return append(kvs, gguf.KV{Key: "general.junk", Value: gguf.Array{Type: gguf.TypeInt32, Values: junk}})
	})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := weights.OpenModel(path)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	m.Close()
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Fatalf("loading allocated %d MB beside a %d MB unused array", alloc>>20, size>>20)
	}
}

// A GGUF file stops where llama.cpp stops: at its EOS id and at every token named as an end of
// turn (<|im_end|>, <|endoftext|>, <end_of_turn>, ...), which files often leave out of their ids.
func TestGGUFEndOfGeneration(t *testing.T) {
	m, err := weights.OpenModel(hostileGGUF(t, editTokens(func(ts []string) []string {
		ts[7], ts[8], ts[9] = "<|im_end|>", "<end_of_turn>", "<|endoftext|>x"
		return ts
	})))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, want := m.Config.EOS, []int{299, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("EOS %v, want %v", got, want)
	}
}
