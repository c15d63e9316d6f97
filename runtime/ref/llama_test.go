package ref

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/weights"
)

// testConfigs cover grouped-query attention with biases and Llama-3 RoPE scaling
// (qwen2-like, untied) and plain multi-head attention with a tied LM head.
var testConfigs = []weights.Config{
	{Arch: "qwen2", Dim: 64, HiddenDim: 96, NLayers: 3, NHeads: 4, NKVHeads: 2, HeadDim: 16, Vocab: 50,
		MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-6, AttnBias: true,
		RopeScaling: &weights.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 32}},
	{Arch: "llama", Dim: 48, HiddenDim: 128, NLayers: 2, NHeads: 3, NKVHeads: 3, HeadDim: 16, Vocab: 40,
		MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true},
}

var testTokens = []int{1, 7, 3, 3, 19, 0, 25, 11, 2, 30, 8, 8, 5}

func maxDiff(t *testing.T, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("lengths %d and %d", len(a), len(b))
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// forwardChunks runs tokens through a fresh state in chunks of the given sizes and
// concatenates the logits and the hidden states.
func forwardChunks(w *weights.LlamaWeights, tokens []int, chunks ...int) ([]float32, [][]float32) {
	s := NewLlamaState(w)
	var logits []float32
	hidden := make([][]float32, w.Cfg.NLayers)
	for _, c := range chunks {
		lg, hd := s.Forward(tokens[s.Len() : s.Len()+c])
		logits = append(logits, lg...)
		for l := range hd {
			hidden[l] = append(hidden[l], hd[l]...)
		}
	}
	return logits, hidden
}

func TestForwardIncrementalEqualsBatched(t *testing.T) {
	for _, cfg := range testConfigs {
		w := RandomLlama(cfg, 1)
		batched, bh := forwardChunks(w, testTokens, len(testTokens))
		for _, chunks := range [][]int{
			{5, 1, 1, 1, 1, 1, 1, 1, 1}, // prefill, then token by token
			{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
			{4, 3, 6}, // verification-sized batches
		} {
			got, gh := forwardChunks(w, testTokens, chunks...)
			if d := maxDiff(t, got, batched); d > 1e-4 {
				t.Errorf("%s %v: logits differ from batched by %g", cfg.Arch, chunks, d)
			}
			for l := range gh {
				if d := maxDiff(t, gh[l], bh[l]); d > 1e-4 {
					t.Errorf("%s %v: hidden[%d] differs from batched by %g", cfg.Arch, chunks, l, d)
				}
			}
		}
		if len(bh) != cfg.NLayers || len(bh[0]) != len(testTokens)*cfg.Dim || len(batched) != len(testTokens)*cfg.Vocab {
			t.Errorf("shapes: %d hidden of %d, %d logits", len(bh), len(bh[0]), len(batched))
		}
	}
}

// The reference's masked logit is the scheduler's (kernelref sits below batch, so the
// constant is written twice).
func TestMaskedLogit(t *testing.T) {
	if kernelref.Masked != batch.Masked {
		t.Fatalf("kernelref.Masked %v, batch.Masked %v", kernelref.Masked, batch.Masked)
	}
}

func TestTruncate(t *testing.T) {
	w := RandomLlama(testConfigs[0], 2)
	V := w.Cfg.Vocab
	batched, _ := NewLlamaState(w).Forward(testTokens)

	s := NewLlamaState(w)
	s.Forward(testTokens[:9])
	s.Truncate(6) // drop positions 6..8, as after rejected drafts
	if s.Len() != 6 {
		t.Fatalf("Len after Truncate(6) = %d", s.Len())
	}
	s.Forward([]int{4, 4}) // wrong continuation, then roll it back too
	s.Truncate(6)
	got, _ := s.Forward(testTokens[6:])
	if d := maxDiff(t, got, batched[6*V:]); d > 1e-4 {
		t.Errorf("after Truncate, logits differ by %g", d)
	}
	if s.Len() != len(testTokens) {
		t.Errorf("Len = %d, want %d", s.Len(), len(testTokens))
	}
	s.Truncate(0)
	got, _ = s.Forward(testTokens[:3])
	if d := maxDiff(t, got, batched[:3*V]); d > 1e-4 {
		t.Errorf("after Truncate(0), logits differ by %g", d)
	}
}

// naiveStep is an independent, scalar, one-token-at-a-time transcription of Hugging Face
// LlamaForCausalLM (rotate_half RoPE with cos/sin tables, repeat_kv), for checking
// Forward's plumbing. keys/values are [layer][position][kvHead*hd].
func naiveStep(w *weights.LlamaWeights, tok, pos int, keys, values [][][]float64) []float64 {
	c := w.Cfg
	hd, rep := c.HeadDim, c.NHeads/c.NKVHeads
	rms := func(x []float64, g []float32) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = float64(g[i]) * v / math.Sqrt(ss/float64(len(x))+c.RMSEps)
		}
		return out
	}
	linear := func(x []float64, wt, b []float32) []float64 {
		out := make([]float64, len(wt)/len(x))
		for o := range out {
			for i, v := range x {
				out[o] += float64(wt[o*len(x)+i]) * v
			}
			if b != nil {
				out[o] += float64(b[o])
			}
		}
		return out
	}
	inv := kernelref.RopeInvFreq(hd, c.RopeTheta, c.RopeScaling)
	rope := func(x []float64) { // x = concat of heads; q*cos + rotate_half(q)*sin
		for h := 0; h < len(x)/hd; h++ {
			head := slices.Clone(x[h*hd : (h+1)*hd])
			for i := 0; i < hd; i++ {
				ang := float64(pos) * inv[i%(hd/2)]
				var rot float64 // rotate_half(head) = concat(-second half, first half)
				if i < hd/2 {
					rot = -head[i+hd/2]
				} else {
					rot = head[i-hd/2]
				}
				x[h*hd+i] = head[i]*math.Cos(ang) + rot*math.Sin(ang)
			}
		}
	}
	x := make([]float64, c.Dim)
	for i := range x {
		x[i] = float64(w.Embed[tok*c.Dim+i])
	}
	for l, ly := range w.Layers {
		h := rms(x, ly.AttnNorm)
		q, k, v := linear(h, ly.Wq, ly.Bq), linear(h, ly.Wk, ly.Bk), linear(h, ly.Wv, ly.Bv)
		rope(q)
		rope(k)
		keys[l] = append(keys[l], k)
		values[l] = append(values[l], v)
		att := make([]float64, c.NHeads*hd)
		for qh := 0; qh < c.NHeads; qh++ {
			kh := qh / rep
			scores := make([]float64, pos+1)
			var sum float64
			for t := range scores {
				for d := 0; d < hd; d++ {
					scores[t] += q[qh*hd+d] * keys[l][t][kh*hd+d]
				}
				scores[t] = math.Exp(scores[t] / math.Sqrt(float64(hd)))
				sum += scores[t]
			}
			for t, s := range scores {
				for d := 0; d < hd; d++ {
					att[qh*hd+d] += s / sum * values[l][t][kh*hd+d]
				}
			}
		}
		o := linear(att, ly.Wo, nil)
		for i := range x {
			x[i] += o[i]
		}
		h = rms(x, ly.FFNNorm)
		g, u := linear(h, ly.WGate, nil), linear(h, ly.WUp, nil)
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		down := linear(g, ly.WDown, nil)
		for i := range x {
			x[i] += down[i]
		}
	}
	return linear(rms(x, w.Norm), w.LMHead, nil)
}

func TestForwardMatchesNaive(t *testing.T) {
	for _, cfg := range testConfigs {
		w := RandomLlama(cfg, 3)
		got, _ := NewLlamaState(w).Forward(testTokens)
		keys, values := make([][][]float64, cfg.NLayers), make([][][]float64, cfg.NLayers)
		for pos, tok := range testTokens {
			want := naiveStep(w, tok, pos, keys, values)
			for i, v := range want {
				if d := math.Abs(v - float64(got[pos*cfg.Vocab+i])); d > 1e-4 {
					t.Fatalf("%s pos %d logit %d: %v, naive %v", cfg.Arch, pos, i, got[pos*cfg.Vocab+i], v)
				}
			}
		}
	}
}

func TestRandomLlamaLogits(t *testing.T) {
	for _, cfg := range testConfigs {
		logits, _ := NewLlamaState(RandomLlama(cfg, 4)).Forward(testTokens)
		var s, ss float64
		for _, v := range logits {
			s += float64(v)
			ss += float64(v) * float64(v)
		}
		n := float64(len(logits))
		std := math.Sqrt(ss/n - (s/n)*(s/n))
		if std < 0.5 || std > 5 || math.IsNaN(std) {
			t.Errorf("%s: logits standard deviation %v", cfg.Arch, std)
		}
		t.Logf("%s: logits std %.3f", cfg.Arch, std)
	}
}

func TestGenerate(t *testing.T) {
	w := RandomLlama(testConfigs[0], 5)
	V := w.Cfg.Vocab
	prompt := testTokens[:4]

	// Greedy: each token is the argmax of the teacher-forced forward over what came before.
	out := Generate(w, prompt, 8, kernelref.SamplingParams{}, 0, nil)
	all := append(slices.Clone(prompt), out...)
	logits, _ := NewLlamaState(w).Forward(all)
	for i, tok := range out {
		row := len(prompt) - 1 + i
		if want := kernelref.Argmax(logits[row*V : (row+1)*V]); tok != want {
			t.Errorf("greedy token %d = %d, want %d", i, tok, want)
		}
	}

	// Sampling: token at position t is Sample(row, p, seed, 0, t).
	p := kernelref.SamplingParams{Temperature: 0.9, TopK: 20, TopP: 0.95}
	out = Generate(w, prompt, 10, p, 77, nil)
	if len(out) != 10 || !slices.Equal(out, Generate(w, prompt, 10, p, 77, nil)) {
		t.Fatalf("Generate not deterministic: %v", out)
	}
	all = append(slices.Clone(prompt), out...)
	logits, _ = NewLlamaState(w).Forward(all)
	for i, tok := range out {
		row := len(prompt) - 1 + i
		if want := kernelref.Sample(logits[row*V:(row+1)*V], p, 77, 0, uint32(row+1)); tok != want {
			t.Errorf("sampled token %d = %d, want %d", i, tok, want)
		}
	}

	// A stop token ends generation and is included.
	stopped := Generate(w, prompt, 10, p, 77, []int{out[3]})
	if want := out[:slices.Index(out, out[3])+1]; !slices.Equal(stopped, want) {
		t.Errorf("with stop %d: %v, want %v", out[3], stopped, want)
	}
}

// BenchmarkStories15MShape: the reference decoding 220 sampled tokens with a model of
// stories15M's shape (random weights), for scale beside the device.
func BenchmarkStories15MShape(b *testing.B) {
	cfg := weights.Config{Arch: "llama", Dim: 288, HiddenDim: 768, NLayers: 6, NHeads: 6, NKVHeads: 6,
		HeadDim: 48, Vocab: 32000, MaxSeq: 256, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true}
	w := RandomLlama(cfg, 6)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out := Generate(w, []int{1}, 220, kernelref.SamplingParams{Temperature: 1, TopP: 0.9}, 1, nil)
		if len(out) != 220 {
			b.Fatalf("%d tokens", len(out))
		}
		b.ReportMetric(float64(len(out))/time.Since(start).Seconds(), "tok/s")
	}
}
