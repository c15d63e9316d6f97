package distill

import (
	"math"
	"math/rand"
)

// Param is one trainable tensor: its values, its gradient and AdamW's two moments.
type Param struct {
	Name  string
	Shape []int
	W, G  []float32
	Decay bool // weight decay applies (matrices; not norms or biases)
	m, v  []float32
}

// newParam makes a zero parameter of the given shape.
func newParam(name string, decay bool, shape ...int) *Param {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &Param{Name: name, Shape: shape, W: make([]float32, n), G: make([]float32, n), Decay: decay}
}

// fillNormal sets p to N(0, std^2); fillConst to c.
func (p *Param) fillNormal(rng *rand.Rand, std float64) *Param {
	for i := range p.W {
		p.W[i] = float32(std * rng.NormFloat64())
	}
	return p
}

func (p *Param) fillConst(c float32) *Param {
	for i := range p.W {
		p.W[i] = c
	}
	return p
}

// AdamW is Loshchilov & Hutter's Adam with decoupled weight decay, as PyTorch's AdamW:
// m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  w -= lr (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps)
// + wd w). Gradients are first clipped to a global L2 norm of Clip (0: no clipping).
type AdamW struct {
	Params            []*Param
	Beta1, Beta2, Eps float64
	WeightDecay, Clip float64
	t                 int
}

// NewAdamW makes an optimizer over params with betas (0.9, 0.95), eps 1e-8, no decay, clip 1.
func NewAdamW(params []*Param) *AdamW {
	for _, p := range params {
		p.m, p.v = make([]float32, len(p.W)), make([]float32, len(p.W))
	}
	return &AdamW{Params: params, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Clip: 1}
}

// ZeroGrad clears every gradient.
func (a *AdamW) ZeroGrad() {
	for _, p := range a.Params {
		clear(p.G)
	}
}

// Step applies one update at learning rate lr and returns the gradient norm before clipping.
func (a *AdamW) Step(lr float64) float64 {
	var ss float64
	for _, p := range a.Params {
		for _, g := range p.G {
			ss += float64(g) * float64(g)
		}
	}
	norm := math.Sqrt(ss)
	scale := 1.0
	if a.Clip > 0 && norm > a.Clip {
		scale = a.Clip / norm
	}
	a.t++
	b1, b2 := a.Beta1, a.Beta2
	c1, c2 := 1-math.Pow(b1, float64(a.t)), 1-math.Pow(b2, float64(a.t))
	for _, p := range a.Params {
		wd := float32(0)
		if p.Decay {
			wd = float32(a.WeightDecay)
		}
		lrf, sc := float32(lr), float32(scale)
		fb1, fb2 := float32(b1), float32(b2)
		ic1, ic2, eps := float32(1/c1), float32(1/c2), float32(a.Eps)
		parallelFor(len(p.W), 1<<16, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				g := p.G[i] * sc
				m := fb1*p.m[i] + (1-fb1)*g
				v := fb2*p.v[i] + (1-fb2)*g*g
				p.m[i], p.v[i] = m, v
				p.W[i] -= lrf * (m*ic1/(float32(math.Sqrt(float64(v*ic2)))+eps) + wd*p.W[i])
			}
		})
	}
	return norm
}

// Schedule is the learning rate at step s of n: a linear warmup over warm steps to peak,
// then a cosine decay to floor*peak.
func Schedule(s, n, warm int, peak, floor float64) float64 {
	if s < warm {
		return peak * float64(s+1) / float64(warm)
	}
	f := float64(s-warm) / float64(max(1, n-warm))
	return peak * (floor + (1-floor)*0.5*(1+math.Cos(math.Pi*min(f, 1))))
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }
