package distill

import "math"

// Losses over logits rows. A teacher distribution is given sparsely: its top-k ids and
// their probabilities (the target's softmax, truncated and renormalised by the caller).

// softCE replaces a logits row z [V] by scale * (softmax(z) - p), the gradient of scale *
// CE(p, softmax(z)), and returns CE = -sum_i p_i log softmax(z)_i, with p given by ids and
// probs (summing to 1).
func softCE(z []float32, ids []int32, probs []float32, scale float32) float64 {
	mx := z[0]
	for _, v := range z {
		mx = max(mx, v)
	}
	var pz float64
	for i, id := range ids {
		pz += float64(probs[i]) * float64(z[id])
	}
	// Logits more than 20 below the largest get probability 0 (under e^-20 of the top
	// one's): no exponential to compute for most of a peaked row.
	floor := mx - 20
	var sum float32
	for i, v := range z {
		if v < floor {
			z[i] = 0
			continue
		}
		e := expf(v - mx)
		z[i] = e
		sum += e
	}
	lse := float64(mx) + math.Log(float64(sum))
	inv := scale / sum
	for i := range z {
		z[i] *= inv
	}
	for i, id := range ids {
		z[id] -= scale * probs[i]
	}
	return lse - pz
}

// teacher is one row's target distribution for a loss: ids and probabilities (summing to
// 1), and the row's weight (0: no loss).
type teacher struct {
	ids   []int32
	probs []float32
	w     float32
}

// softCERows applies softCE to each row of logits [rows, V] with its teacher (rows of
// weight 0 get a zero gradient) and returns the sum of w * CE over the rows.
func softCERows(logits []float32, rows, V int, t []teacher) float64 {
	losses := make([]float64, rows)
	parallelFor(rows, 8, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			z := logits[r*V : (r+1)*V]
			if t[r].w == 0 {
				clear(z)
				continue
			}
			losses[r] = float64(t[r].w) * softCE(z, t[r].ids, t[r].probs, t[r].w)
		}
	})
	var s float64
	for _, l := range losses {
		s += l
	}
	return s
}

// topK writes the k most likely entries of softmax(z) for a logits row z [V] into ids and
// probs (most likely first) and returns the argmax. Logits more than 20 below the largest
// (probability under e^-20 of the top one's) are left out of the sum and the selection.
func topK(z []float32, ids []int32, probs []float32) int {
	k := len(ids)
	mx := z[0]
	var sum float32 // sum of exp(v - mx) over the logits seen above mx - 20 (online softmax)
	n := 0          // entries held, sorted descending by logit in probs (as logits for now)
	for i, v := range z {
		if v < mx-20 {
			continue
		}
		if v > mx {
			sum *= expf(mx - v)
			mx = v
		}
		sum += expf(v - mx)
		if n == k && v <= probs[k-1] {
			continue
		}
		j := min(n, k-1)
		for j > 0 && probs[j-1] < v {
			probs[j], ids[j] = probs[j-1], ids[j-1]
			j--
		}
		probs[j], ids[j] = v, int32(i)
		if n < k {
			n++
		}
	}
	for j := range n {
		probs[j] = expf(probs[j]-mx) / sum
	}
	for j := n; j < k; j++ {
		ids[j], probs[j] = ids[0], 0
	}
	return int(ids[0])
}
