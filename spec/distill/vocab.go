package distill

// trainVocab is a frozen LM head cut to the rows of a training vocabulary: the tokens of
// most TokenMass. EAGLE-1's and Medusa's losses go through the target's 32000-row head,
// most of their cost; on the stories data a few thousand tokens hold all but ~1e-4 of the
// target's probability mass, so their soft cross-entropy is taken over those rows only
// (the drafter runs with the whole head; the tokens left out are ones the target all but
// never predicts in this domain).
type trainVocab struct {
	used []int32 // training id -> target id
	t2v  []int32 // target id -> training id, or -1
	w    []float32
	p    *Packed
	mass float64 // the fraction of the probability mass the rows hold
}

// newTrainVocab cuts head [V, H] to the n ids of most mass (all V when n <= 0 or n >= V).
func newTrainVocab(head []float32, V, H int, mass []float64, n int) *trainVocab {
	if n <= 0 || n > V {
		n = V
	}
	v := &trainVocab{}
	v.used, v.mass = DraftVocab(mass, n)
	v.t2v = make([]int32, V)
	for i := range v.t2v {
		v.t2v[i] = -1
	}
	v.w = make([]float32, n*H)
	for i, id := range v.used {
		v.t2v[id] = int32(i)
		copy(v.w[i*H:(i+1)*H], head[int(id)*H:])
	}
	v.p = PackWeight(v.w, n, H)
	return v
}

// teacher maps a target-id teacher (ids, probs, most likely first) into training ids in
// place, dropping the ids outside and renormalising, and returns it with weight w (0 when
// nothing is left).
func (v *trainVocab) teacher(ids []int32, probs []float32, w float32) teacher {
	m, sum := 0, float32(0)
	for j, id := range ids {
		if t := v.t2v[id]; t >= 0 && probs[j] > 0 {
			ids[m], probs[m] = t, probs[j]
			sum += probs[j]
			m++
		}
	}
	if m == 0 {
		return teacher{}
	}
	for j := range m {
		probs[j] /= sum
	}
	return teacher{ids: ids[:m], probs: probs[:m], w: w}
}

// loss is headLoss through the cut head.
func (v *trainVocab) loss(x, dx []float32, teach []teacher, st *StepStats, slot int) float64 {
	return headLoss(v.p, v.w, x, dx, teach, st, slot)
}
