package distill

import (
	"math"
	"os"
	"testing"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

const storiesDir = "../../.wspec/models/stories15M"

func maxRelDiff(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*scale {
			t.Fatalf("%s[%d] = %v, want %v (scale %v)", what, i, got[i], want[i], scale)
		}
	}
}

// The CPU forward against runtime/ref: a prompt in one Forward, then single rows, with two
// sequences interleaved; logits, the last hidden state and the aux snapshots.
func testLlamaAgainstRef(t *testing.T, w *weights.LlamaWeights, prompt []int, steps int) {
	m, err := NewLlama(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	aux := []int{0, min(2, w.Cfg.NLayers-1), w.Cfg.NLayers - 1}
	rs := ref.NewLlamaState(w)
	a, b := m.NewCache(), m.NewCache()
	tokens := prompt
	for step := range steps {
		var rows []Row
		for _, tok := range tokens {
			rows = append(rows, Row{a, tok})
		}
		rows = append(rows, Row{b, 5 + step}) // another sequence in the same batch
		out, err := m.Forward(rows, aux, true)
		if err != nil {
			t.Fatal(err)
		}
		wantLogits, hidden := rs.Forward(tokens)
		V, dim := w.Cfg.Vocab, w.Cfg.Dim
		M := len(tokens)
		maxRelDiff(t, "logits", out.Logits[:M*V], wantLogits, 1e-4)
		maxRelDiff(t, "hidden", out.Hidden[:M*dim], hidden[w.Cfg.NLayers-1], 1e-4)
		wantAux := ref.EagleFeatures(w, tokens, hidden, aux)
		maxRelDiff(t, "aux", out.Aux[:M*len(aux)*dim], wantAux, 1e-4)
		tokens = []int{kernelref.Argmax(wantLogits[(M-1)*V:])}
	}
}

func TestLlamaMatchesRef(t *testing.T) {
	cfg := weights.Config{Arch: "llama", Dim: 32, HiddenDim: 48, NLayers: 3, NHeads: 4, NKVHeads: 4, HeadDim: 8,
		Vocab: 50, MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true}
	testLlamaAgainstRef(t, ref.RandomLlama(cfg, 7), []int{1, 4, 9, 16, 25}, 6)
}

// Grouped-query attention (SmolLM2 and Llama 3 share each key/value head among 3-4 query
// heads).
func TestLlamaMatchesRefGQA(t *testing.T) {
	cfg := weights.Config{Arch: "llama", Dim: 48, HiddenDim: 64, NLayers: 3, NHeads: 6, NKVHeads: 2, HeadDim: 8,
		Vocab: 50, MaxSeq: 64, RopeTheta: 100000, RMSEps: 1e-5, TieEmbed: true}
	testLlamaAgainstRef(t, ref.RandomLlama(cfg, 9), []int{1, 4, 9, 16, 25}, 6)
}

func TestLlamaMatchesRefStories(t *testing.T) {
	if _, err := os.Stat(storiesDir); err != nil {
		t.Fatalf("stories15M not set up (%v): run ./setup.sh", err)
	}
	w, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	testLlamaAgainstRef(t, w, []int{1, 9038, 2501, 263, 931}, 4)
}
