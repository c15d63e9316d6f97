package distill

import (
	"math"
	"math/rand"
	"testing"
)

// roughen perturbs params away from their (often regular) starting values.
func roughen(rng *rand.Rand, std float64, ps ...*Param) {
	for _, p := range ps {
		for i := range p.W {
			p.W[i] += float32(std * rng.NormFloat64())
		}
	}
}

func TestEagle1Grad(t *testing.T) {
	w, d := tinyTarget(t, nil)
	e, err := NewEagle1(w, d, Eagle1Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	roughen(rand.New(rand.NewSource(2)), 0.3, e.Params()...)
	seqs := []int{0, 3, 4}
	checkTrainerGrad(t, e.Params(), func() float64 { return e.Step(seqs).Loss }, 12)
}

func TestMedusaGrad(t *testing.T) {
	w, d := tinyTarget(t, nil)
	m, err := NewMedusa(w, d, MedusaOptions{Heads: 3})
	if err != nil {
		t.Fatal(err)
	}
	roughen(rand.New(rand.NewSource(3)), 0.3, m.Params()...)
	seqs := []int{1, 2, 5}
	checkTrainerGrad(t, m.Params(), func() float64 { return m.Step(seqs).Loss }, 12)
}

func TestDraftModelGrad(t *testing.T) {
	w, d := tinyTarget(t, nil)
	m, err := NewDraftModel(w, d, DraftOptions{Layers: 2, Dim: 8, Hidden: 12, Heads: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	roughen(rand.New(rand.NewSource(4)), 0.3, m.Params()...)
	seqs := []int{0, 1, 5}
	checkTrainerGrad(t, m.Params(), func() float64 { return m.Step(seqs).Loss }, 12)
}

func TestJacobiEigen(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	n := 9
	b := make([]float64, n*n)
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	a := make([]float64, n*n) // b^T b: symmetric
	for i := range n {
		for j := range n {
			for k := range n {
				a[i*n+j] += b[k*n+i] * b[k*n+j]
			}
		}
	}
	orig := append([]float64(nil), a...)
	vals, vecs := jacobiEigen(a, n)
	for c := range n { // A v = lambda v
		for i := range n {
			var s float64
			for j := range n {
				s += orig[i*n+j] * vecs[j*n+c]
			}
			if math.Abs(s-vals[c]*vecs[i*n+c]) > 1e-9 {
				t.Fatalf("eigenpair %d: (Av)[%d] = %v, lambda v = %v", c, i, s, vals[c]*vecs[i*n+c])
			}
		}
	}
}

// pcaProject keeps the dot products of a matrix of rank <= D exactly.
func TestPCAProject(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	V, H, D := 30, 10, 4
	a, b := randVec(rng, V*D), randVec(rng, D*H)
	e := make([]float32, V*H)
	naiveGemm(false, false, V, H, D, a, b, e, false)
	p := pcaProject(e, V, H, D)
	for i := range V {
		for j := range V {
			want := dot(e[i*H:(i+1)*H], e[j*H:(j+1)*H])
			got := dotGo(p[i*D:(i+1)*D], p[j*D:(j+1)*D])
			if math.Abs(float64(got-want)) > 1e-3*(1+math.Abs(float64(want))) {
				t.Fatalf("dot(%d, %d) = %v after projection, %v before", i, j, got, want)
			}
		}
	}
}
