package kernelref

import (
	"slices"
	"testing"
)

// target3 is [3, 5]: target logits for k = 2 drafts plus the bonus row.
var target3 = []float32{
	1.0, 2.5, 0.3, 2.2, -1.0, // row 0: argmax 1
	0.0, 0.5, 3.0, 1.0, 0.2, // row 1: argmax 2
	2.0, 0.0, 0.0, 1.0, 4.0, // row 2: argmax 4
}

func TestRejectionGreedy(t *testing.T) {
	p := SamplingParams{Temperature: 0}
	for _, c := range []struct {
		drafts []int
		want   []int
		n      int
	}{
		{[]int{1, 2}, []int{1, 2, 4}, 2}, // all accepted, bonus argmax(row 2)
		{[]int{1, 3}, []int{1, 2}, 1},    // second rejected, recovered argmax(row 1)
		{[]int{0, 2}, []int{1}, 0},       // first rejected
	} {
		out, n := RejectionSample(target3, c.drafts, nil, p, 5, 0, 10)
		if !slices.Equal(out, c.want) || n != c.n {
			t.Errorf("drafts %v: got %v (%d accepted), want %v (%d)", c.drafts, out, n, c.want, c.n)
		}
	}
	// No drafts: just the bonus token.
	out, n := RejectionSample(target3[10:], nil, nil, p, 5, 0, 10)
	if !slices.Equal(out, []int{4}) || n != 0 {
		t.Errorf("no drafts: got %v, %d", out, n)
	}
}

// q2 is [2, 5]: draft distributions that differ from the target's.
var q2 = []float32{
	0.1, 0.1, 0.2, 0.5, 0.1,
	0.3, 0.3, 0.1, 0.1, 0.2,
}

// drawFrom samples index i with probability q[i], independently of the keys the
// rejection sampler uses (seq 1000 + j).
func drawFrom(q []float32, seed uint64, j uint32) int {
	w := make([]float64, len(q))
	for i, v := range q {
		w[i] = float64(v)
	}
	return GumbelMax(w, seed, 1000+j, 0)
}

// The first output token is distributed as the target's processed probabilities, whether
// it is an accepted draft or a recovered token; given that draft 0 was accepted, the
// second output token is distributed as row 1's; given both, the bonus as row 2's.
func TestRejectionDistribution(t *testing.T) {
	const n = 40000
	for _, p := range []SamplingParams{
		{Temperature: 1},
		{Temperature: 0.8, TopK: 3},
		{Temperature: 1.2, TopP: 0.8},
	} {
		for _, withQ := range []bool{true, false} {
			first := make([]float64, 5)
			second, third := make([]float64, 5), make([]float64, 5)
			var nSecond, nThird float64
			for s := 0; s < n; s++ {
				seed := uint64(s)*0x9E3779B97F4A7C15 + 3
				drafts := []int{drawFrom(q2[:5], seed, 0), drawFrom(q2[5:], seed, 1)}
				var q []float32
				if withQ {
					q = q2
				} else {
					drafts = []int{3, 0} // a deterministic drafter: one-hot q
				}
				out, acc := RejectionSample(target3, drafts, q, p, seed, 2, 100)
				if len(out) != acc+1 || !slices.Equal(out[:acc], drafts[:acc]) {
					t.Fatalf("out %v with %d accepted of drafts %v", out, acc, drafts)
				}
				first[out[0]]++
				if acc >= 1 {
					second[out[1]]++
					nSecond++
				}
				if acc == 2 {
					third[out[2]]++
					nThird++
				}
			}
			for i := range first {
				first[i] /= n
				second[i] /= nSecond
				third[i] /= nThird
			}
			for j, got := range [][]float64{first, second, third} {
				if count := []float64{n, nSecond, nThird}[j]; count < 2000 {
					continue // a draft the target rarely accepts: too few samples
				}
				want := ProcessedProbs(target3[j*5:(j+1)*5], p)
				// The conditional rows rest on fewer samples: allow for it.
				tol := 0.02
				if j > 0 {
					tol = 0.03
				}
				if d := tv(got, want); d > tol {
					t.Errorf("%+v q=%v token %d: empirical %v vs %v, total variation %.4f", p, withQ, j, got, want, d)
				}
			}
		}
	}
}

func TestRejectionAcceptance(t *testing.T) {
	p := SamplingParams{Temperature: 1}
	// q == p: every draft is accepted (u < 1 always) and the bonus is Sample's draw.
	q := make([]float32, 10)
	for j := 0; j < 2; j++ {
		for i, v := range ProcessedProbs(target3[j*5:(j+1)*5], p) {
			q[j*5+i] = float32(v)
		}
	}
	for seed := uint64(0); seed < 500; seed++ {
		drafts := []int{drawFrom(q[:5], seed, 0), drawFrom(q[5:], seed, 1)}
		// float32 rounding of q can make p/q a hair below 1; that is still accepted
		// unless u lands within 1e-7 of 1, which 24-bit uniforms almost never do.
		out, n := RejectionSample(target3, drafts, q, p, seed, 0, 7)
		if n != 2 || out[2] != Sample(target3[10:], p, seed, 0, 9) {
			t.Fatalf("seed %d: q == p gave %v (%d accepted)", seed, out, n)
		}
	}

	// Acceptance rate of draft 0 = sum_i min(p_i, q_i).
	pp := ProcessedProbs(target3[:5], p)
	var want float64
	for i := range pp {
		want += min(pp[i], float64(q2[i]))
	}
	const n = 20000
	var accepted float64
	for s := 0; s < n; s++ {
		seed := uint64(s) + 1<<40
		if _, a := RejectionSample(target3, []int{drawFrom(q2[:5], seed, 0), 0}, q2, p, seed, 0, 0); a > 0 {
			accepted++
		}
	}
	if got := accepted / n; !near(got, want, 0.015) {
		t.Errorf("acceptance rate %.4f, want %.4f", got, want)
	}

	// A draft the drafter gave probability 0 but the target does not: accepted (ratio 1).
	zero := slices.Clone(q2)
	zero[1], zero[0] = 0, 0.2
	if _, a := RejectionSample(target3[:10], []int{1}, zero[:5], p, 1, 0, 0); a != 1 {
		t.Errorf("q(d) = 0 < p(d): %d accepted, want 1", a)
	}
	// A draft outside the target's kept set is always rejected.
	pk := SamplingParams{Temperature: 1, TopK: 2} // row 0 keeps 1 and 3
	for seed := uint64(0); seed < 200; seed++ {
		out, a := RejectionSample(target3[:10], []int{0}, nil, pk, seed, 0, 0)
		if a != 0 || (out[0] != 1 && out[0] != 3) {
			t.Fatalf("seed %d: draft outside top-k gave %v (%d accepted)", seed, out, a)
		}
	}
}
