package grammar

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights/tokenizer"
)

// The mask's cost per token on a real vocabulary: a JSON document of personSchema's shape,
// tokenized, is walked token by token (Mask, then Accept), as the scheduler does for a row
// with no drafts. WSPEC_BENCH_TOKENIZER names a folder with a tokenizer.json (the scripts'
// bench-masks.sh fetches Llama 3's, 128256 tokens); by default the default model's.
//
//	cold: a new grammar each document (the first request of a schema: every state's
//	      context-free mask is computed by a walk of the vocabulary's trie)
//	warm: the grammar from the cache, a new matcher each document (later requests)
//	other: a grammar that has walked one document walks another (a later request whose
//	      text takes other paths through the schema's states)

const benchSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"},
"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["name","age","ok","tags"],"additionalProperties":false}`

const benchDoc = `{"name": "Ada Lovelace, who wrote the first program", "age": 36, "ok": true, "tags": ["math", "engines", "poetry of science"]}`

const benchDoc2 = `{ "name" : "Grace \"Amazing\" Hopper","age":85, "ok": false, "tags": [] }`

func benchVocab(b *testing.B) (*Vocab, []int) {
	dir := benchDir()
	tok, err := tokenizer.Load(dir)
	if err != nil {
		b.Fatalf("%v (run ./setup.sh, or set WSPEC_BENCH_TOKENIZER to a folder with a tokenizer.json)", err)
	}
	v := NewVocab(tok.VocabSize(), tok.TokenBytes)
	ids := tok.Encode(benchDoc, false)
	b.Logf("%s: vocabulary %d, the document is %d tokens", dir, v.Size(), len(ids))
	return v, ids
}

func walkDoc(b *testing.B, g *Grammar, ids []int) {
	m := g.NewMatcher()
	for _, id := range ids {
		mask, _ := m.Mask()
		if !Allowed(mask, id) {
			b.Fatalf("token %d masked", id)
		}
		if err := m.Accept(id); err != nil {
			b.Fatal(err)
		}
	}
	if !m.End() {
		b.Fatal("the document is not a whole match")
	}
}

func BenchmarkMaskCold(b *testing.B) {
	v, ids := benchVocab(b)
	b.ResetTimer()
	for range b.N {
		g, err := Compile(Spec{Kind: JSONSchema, Text: benchSchema}, v)
		if err != nil {
			b.Fatal(err)
		}
		walkDoc(b, g, ids)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids))/1e6, "ms/token")
}

func BenchmarkMaskWarm(b *testing.B) {
	v, ids := benchVocab(b)
	g, err := Compile(Spec{Kind: JSONSchema, Text: benchSchema}, v)
	if err != nil {
		b.Fatal(err)
	}
	walkDoc(b, g, ids)
	b.ResetTimer()
	for range b.N {
		walkDoc(b, g, ids)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids))/1e6, "ms/token")
}

func BenchmarkVocab(b *testing.B) {
	tok, err := tokenizer.Load(benchDir())
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		NewVocab(tok.VocabSize(), tok.TokenBytes)
	}
}

func BenchmarkMaskOther(b *testing.B) {
	v, ids := benchVocab(b)
	tok, _ := tokenizer.Load(benchDir())
	ids2 := tok.Encode(benchDoc2, false)
	var n int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		g, err := Compile(Spec{Kind: JSONSchema, Text: benchSchema}, v)
		if err != nil {
			b.Fatal(err)
		}
		walkDoc(b, g, ids)
		b.StartTimer()
		walkDoc(b, g, ids2)
		n += len(ids2)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/1e6, "ms/token")
}

func benchDir() string {
	if dir := os.Getenv("WSPEC_BENCH_TOKENIZER"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", ".wspec", "models", "stories15M")
}
