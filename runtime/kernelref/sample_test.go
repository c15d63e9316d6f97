package kernelref

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

var logits5 = []float32{1.0, 2.5, 0.3, 2.5, -1.0} // [5]: a tie at the top

func sum64(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}

// tv is the total variation distance between two distributions.
func tv(a, b []float64) float64 {
	var d float64
	for i := range a {
		d += math.Abs(a[i] - b[i])
	}
	return d / 2
}

func TestGreedy(t *testing.T) {
	for _, temp := range []float32{0, -1} {
		p := SamplingParams{Temperature: temp, TopK: 2, TopP: 0.5}
		for seed := uint64(0); seed < 20; seed++ {
			if got := Sample(logits5, p, seed, 3, uint32(seed)); got != 1 {
				t.Fatalf("greedy Sample = %d, want 1 (lowest index of the max)", got)
			}
		}
		probs := ProcessedProbs(logits5, p)
		if probs[1] != 1 || sum64(probs) != 1 {
			t.Errorf("greedy ProcessedProbs = %v, want one-hot on 1", probs)
		}
	}
}

func TestProcessedProbs(t *testing.T) {
	softmax := func(z []float64) []float64 {
		out := make([]float64, len(z))
		var s float64
		for i, v := range z {
			out[i] = math.Exp(v)
			s += out[i]
		}
		for i := range out {
			out[i] /= s
		}
		return out
	}
	all := softmax([]float64{1, 2.5, 0.3, 2.5, -1})
	hot := softmax([]float64{2, 5, 0.6, 5, -2}) // temperature 0.5

	for _, c := range []struct {
		name string
		p    SamplingParams
		want []float64
	}{
		{"plain", SamplingParams{Temperature: 1}, all},
		{"temperature", SamplingParams{Temperature: 0.5}, hot},
		{"top-k off (k = V)", SamplingParams{Temperature: 1, TopK: 5}, all},
		{"top-k 3", SamplingParams{Temperature: 1, TopK: 3}, renorm(all, 0, 1, 3)},
		{"top-k 1 keeps the tie", SamplingParams{Temperature: 1, TopK: 1}, renorm(all, 1, 3)},
		{"top-p off (p = 1)", SamplingParams{Temperature: 1, TopP: 1}, all},
		// all = [.0944 .4230 .0469 .4230 .0128]: .4230 alone is < 0.5, and its tie
		// partner is kept with it even when it alone reaches top-p.
		{"top-p 0.3", SamplingParams{Temperature: 1, TopP: 0.3}, renorm(all, 1, 3)},
		{"top-p 0.5", SamplingParams{Temperature: 1, TopP: 0.5}, renorm(all, 1, 3)},
		{"top-p 0.9", SamplingParams{Temperature: 1, TopP: 0.9}, renorm(all, 0, 1, 3)},
		{"top-p 0.95", SamplingParams{Temperature: 1, TopP: 0.95}, renorm(all, 0, 1, 2, 3)},
		// top-k first (keeps 0, 1, 3), then top-p on the renormalised [.1004 .4498 .4498]:
		// .4498 + .4498 = .8996 reaches 0.85 but not 0.9.
		{"top-k 3 then top-p 0.85", SamplingParams{Temperature: 1, TopK: 3, TopP: 0.85}, renorm(all, 1, 3)},
		{"top-k 3 then top-p 0.9", SamplingParams{Temperature: 1, TopK: 3, TopP: 0.9}, renorm(all, 0, 1, 3)},
	} {
		got := ProcessedProbs(logits5, c.p)
		if !near(sum64(got), 1, 1e-12) {
			t.Errorf("%s: sums to %v", c.name, sum64(got))
		}
		for i := range got {
			if !near(got[i], c.want[i], 1e-8) { // logits are float32
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// renorm keeps the listed entries of p and renormalises them.
func renorm(p []float64, keep ...int) []float64 {
	out := make([]float64, len(p))
	var s float64
	for _, i := range keep {
		s += p[i]
	}
	for _, i := range keep {
		out[i] = p[i] / s
	}
	return out
}

// empirical returns the frequencies of draw(seed) over n seeds.
func empirical(V, n int, draw func(seed uint64) int) []float64 {
	counts := make([]float64, V)
	for s := 0; s < n; s++ {
		counts[draw(uint64(s)*0x9E3779B97F4A7C15+1)]++
	}
	for i := range counts {
		counts[i] /= float64(n)
	}
	return counts
}

func TestSampleDistribution(t *testing.T) {
	const n = 20000
	for _, p := range []SamplingParams{
		{Temperature: 1},
		{Temperature: 0.7},
		{Temperature: 2, TopK: 3},
		{Temperature: 1.3, TopP: 0.9},
	} {
		want := ProcessedProbs(logits5, p)
		got := empirical(5, n, func(seed uint64) int { return Sample(logits5, p, seed, 7, 42) })
		if d := tv(got, want); d > 0.02 {
			t.Errorf("%+v: empirical %v vs %v, total variation %.4f", p, got, want, d)
		}
		for i := range want {
			if want[i] == 0 && got[i] != 0 {
				t.Errorf("%+v: drew token %d outside the kept set", p, i)
			}
		}
	}
	// The draw is a pure function of the key; other positions give other draws.
	p := SamplingParams{Temperature: 1}
	same, diff := 0, 0
	for pos := uint32(0); pos < 200; pos++ {
		a, b := Sample(logits5, p, 9, 0, pos), Sample(logits5, p, 9, 0, pos)
		if a != b {
			t.Fatalf("Sample not deterministic at pos %d", pos)
		}
		if a == Sample(logits5, p, 9, 0, pos+1) {
			same++
		} else {
			diff++
		}
	}
	if diff == 0 {
		t.Errorf("Sample ignores pos")
	}
}

// topPThreshold's candidate filter must give the threshold of a full sort, for peaked
// and flat distributions alike.
func TestTopPThreshold(t *testing.T) {
	full := func(probs []float64, topP float64) float64 {
		var s []float64
		for _, v := range probs {
			if v > 0 {
				s = append(s, v)
			}
		}
		slices.Sort(s)
		slices.Reverse(s)
		var cum float64
		for _, v := range s {
			if cum += v; cum >= topP {
				return v
			}
		}
		return s[len(s)-1]
	}
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		V := 1 + rng.Intn(3000)
		logits := make([]float32, V)
		scale := []float64{0.01, 1, 5, 30}[trial%4] // flat to peaked
		for i := range logits {
			logits[i] = float32(scale * rng.NormFloat64())
			if rng.Intn(10) == 0 && i > 0 {
				logits[i] = logits[i-1] // ties
			}
		}
		probs := ProcessedProbs(logits, SamplingParams{Temperature: 1, TopK: rng.Intn(V + 1)})
		for _, topP := range []float64{0.01, 0.5, 0.9, 0.999, 1 - 1e-12} {
			if got, want := topPThreshold(probs, topP), full(probs, topP); got != want {
				t.Fatalf("V %d scale %v top-p %v: threshold %v, full sort %v", V, scale, topP, got, want)
			}
		}
	}
}
