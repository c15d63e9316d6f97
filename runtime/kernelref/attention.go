package kernelref

import (
	"fmt"
	"math"

	"github.com/wspec/wspec/weights"
)

// RopeInvFreq returns the rotary inverse frequencies inv_freq [headDim/2] of Hugging Face
// Llama:
//
//	inv_freq[i] = theta^(-2i/headDim),  i in [0, headDim/2)
//
// then, with linear scaling, each divided by Factor; with llama3 scaling, with orig = OriginalMaxPos,
// low = LowFreqFactor, high = HighFreqFactor and wavelen = 2*pi/inv_freq[i]:
//
//	wavelen < orig/high:  inv_freq[i] unchanged              (high frequencies)
//	wavelen > orig/low:   inv_freq[i] /= Factor               (low frequencies)
//	otherwise:            smooth = (orig/wavelen - low) / (high - low)
//	                      inv_freq[i] = (1-smooth)*inv_freq[i]/Factor + smooth*inv_freq[i]
//
// All in float64.
func RopeInvFreq(headDim int, theta float64, scaling *weights.RopeScaling) []float64 {
	if headDim%2 != 0 {
		panic(fmt.Sprintf("kernelref.RopeInvFreq: odd head dimension %d", headDim))
	}
	invFreq := make([]float64, headDim/2) // [headDim/2]
	for i := range invFreq {
		invFreq[i] = math.Pow(theta, -float64(2*i)/float64(headDim))
	}
	if scaling == nil {
		return invFreq
	}
	if scaling.Linear {
		for i := range invFreq {
			invFreq[i] /= scaling.Factor
		}
		return invFreq
	}
	orig := float64(scaling.OriginalMaxPos)
	low, high := scaling.LowFreqFactor, scaling.HighFreqFactor
	lowFreqWavelen := orig / low   // longer wavelengths are slowed by Factor
	highFreqWavelen := orig / high // shorter wavelengths are kept
	for i, f := range invFreq {
		wavelen := 2 * math.Pi / f
		switch {
		case wavelen < highFreqWavelen:
		case wavelen > lowFreqWavelen:
			invFreq[i] = f / scaling.Factor
		default:
			smooth := (orig/wavelen - low) / (high - low)
			invFreq[i] = (1-smooth)*f/scaling.Factor + smooth*f
		}
	}
	return invFreq
}

// Rope applies the rotary position embedding in place to x [rows, nHeads, headDim],
// row r being at position pos[r]. It is Hugging Face's half rotation (rotate_half): for
// each head and each i in [0, headDim/2), with angle = pos[r] * invFreq[i] (float64),
//
//	x0, x1 := x[i], x[i + headDim/2]
//	x[i]             = x0*cos(angle) - x1*sin(angle)
//	x[i + headDim/2] = x0*sin(angle) + x1*cos(angle)
//
// invFreq [headDim/2] comes from RopeInvFreq.
func Rope(x []float32, pos []int, rows, nHeads, headDim int, invFreq []float64) {
	check("Rope x", x, rows*nHeads*headDim)
	if len(pos) != rows || len(invFreq) != headDim/2 {
		panic(fmt.Sprintf("kernelref.Rope: %d positions and %d frequencies for %d rows of head dimension %d",
			len(pos), len(invFreq), rows, headDim))
	}
	half := headDim / 2
	for r := 0; r < rows; r++ {
		for i, f := range invFreq {
			angle := float64(pos[r]) * f
			sin, cos := math.Sincos(angle)
			for h := 0; h < nHeads; h++ {
				head := x[(r*nHeads+h)*headDim : (r*nHeads+h+1)*headDim] // [headDim]
				x0, x1 := float64(head[i]), float64(head[i+half])
				head[i] = float32(x0*cos - x1*sin)
				head[i+half] = float32(x0*sin + x1*cos)
			}
		}
	}
}

// Attention is causal scaled-dot-product attention with grouped-query heads.
//
//	q       [M, nH, hd]   queries of the M new tokens, token m at position pos[m]
//	kCache  [T, nKV, hd]  keys of the whole sequence so far (positions 0..T-1), the M new
//	vCache  [T, nKV, hd]  tokens' keys and values already written at their positions
//	out     [M, nH, hd]
//
// Query head h reads kv head h / (nH/nKV). For the query of token m at p = pos[m]:
//
//	s[t]   = q[m, h, :] . k[t, h/(nH/nKV), :] / sqrt(hd)   for t in 0..p (inclusive)
//	a[t]   = exp(s[t] - max s) / sum_t' exp(s[t'] - max s)
//	out[m, h, :] = sum_t a[t] * v[t, h/(nH/nKV), :]
//
// Positions after p are masked (causal), whatever T is. Scores, softmax and the weighted
// sum are float64.
func Attention(q, kCache, vCache []float32, pos []int, M, T, nH, nKV, hd int) []float32 {
	return AttentionWindow(q, kCache, vCache, pos, M, T, nH, nKV, hd, 1/math.Sqrt(float64(hd)), 0)
}

// AttentionWindow is Attention with the scores scaled by scale instead of 1/sqrt(hd) and,
// for window > 0, the query at p seeing only positions p - window + 1 .. p (a sliding window
// of window tokens, itself included: Gemma's local layers).
func AttentionWindow(q, kCache, vCache []float32, pos []int, M, T, nH, nKV, hd int, scale float64, window int) []float32 {
	check("Attention q", q, M*nH*hd)
	check("Attention kCache", kCache, T*nKV*hd)
	check("Attention vCache", vCache, T*nKV*hd)
	if len(pos) != M || nKV <= 0 || nH%nKV != 0 {
		panic(fmt.Sprintf("kernelref.Attention: %d positions for %d queries, %d heads over %d kv heads",
			len(pos), M, nH, nKV))
	}
	for _, p := range pos {
		if p < 0 || p >= T {
			panic(fmt.Sprintf("kernelref.Attention: position %d outside a cache of %d", p, T))
		}
	}
	group := nH / nKV               // query heads per kv head
	out := make([]float32, M*nH*hd) // [M, nH, hd]
	parallelRows(M*nH, M*nH*T*hd*2, func(lo, hi int) {
		for mh := lo; mh < hi; mh++ {
			m, h := mh/nH, mh%nH
			p := pos[m]
			kvh := h / group
			qh := toF64(q[mh*hd : (mh+1)*hd]) // [hd]
			first := 0                        // the first position the query sees
			if window > 0 {
				first = max(0, p-window+1)
			}
			scores := make([]float64, p+1) // [p+1]; 0 before first once exponentiated
			mx := math.Inf(-1)
			for t := first; t <= p; t++ {
				kt := kCache[(t*nKV+kvh)*hd : (t*nKV+kvh+1)*hd] // [hd]
				scores[t] = dot(qh, kt) * scale
				mx = math.Max(mx, scores[t])
			}
			var sum float64
			for t := range scores {
				if t < first {
					scores[t] = 0
					continue
				}
				scores[t] = math.Exp(scores[t] - mx)
				sum += scores[t]
			}
			acc := make([]float64, hd) // [hd]
			for t, a := range scores {
				vt := vCache[(t*nKV+kvh)*hd : (t*nKV+kvh+1)*hd] // [hd]
				for d, v := range vt {
					acc[d] += a / sum * float64(v)
				}
			}
			for d, v := range acc {
				out[mh*hd+d] = float32(v)
			}
		}
	})
	return out
}
