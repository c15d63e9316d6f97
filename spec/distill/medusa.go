package distill

import (
	"fmt"
	"math"

	"github.com/wspec/wspec/weights"
)

// MedusaOptions size Medusa heads.
type MedusaOptions struct {
	Heads int // K (Medusa uses 4 or 5)
	Vocab int // rows of the LM head the soft cross-entropy is taken over (0: all; see trainVocab)
}

// Medusa trains Medusa-1 heads (distill.md section 4) on a frozen target: head k reads the
// target's last hidden state of position t after the final norm, h, and computes
// z = h + silu(W_k h + b_k) (one ResBlock), then logits = the target's LM head z (Medusa
// v2's layout: no output layer of its own). It predicts the token k+2 places after t, so
// its teacher is the target's distribution at position t+1+k; the loss is the soft
// cross-entropy (over the training vocabulary), weighted 0.8^k, averaged over the rows.
type Medusa struct {
	o      MedusaOptions
	target *weights.LlamaWeights
	ds     *Dataset
	H      int
	W, B   []*Param // [K] of [H, H] and [H]
	vocab  *trainVocab
}

// NewMedusa makes K heads for target t trained on d. W and b start at zero: each head
// starts as the identity (the target's own next-token guess), as Medusa initialises them.
func NewMedusa(t *weights.LlamaWeights, d *Dataset, o MedusaOptions) (*Medusa, error) {
	H := t.Cfg.Dim
	if o.Heads < 1 || o.Heads > 16 {
		return nil, fmt.Errorf("distill: %d Medusa heads (want 1..16)", o.Heads)
	}
	if d.Dim != H {
		return nil, fmt.Errorf("distill: a dataset of width %d for a target of %d", d.Dim, H)
	}
	m := &Medusa{o: o, target: t, ds: d, H: H}
	m.vocab = newTrainVocab(t.LMHead, t.Cfg.Vocab, H, TokenMass(d, t.Cfg.Vocab), o.Vocab)
	for k := range o.Heads {
		m.W = append(m.W, newParam(fmt.Sprintf("%d.0.linear.weight", k), true, H, H))
		m.B = append(m.B, newParam(fmt.Sprintf("%d.0.linear.bias", k), false, H))
	}
	return m, nil
}

func (m *Medusa) Params() []*Param { return append(append([]*Param(nil), m.W...), m.B...) }

func (m *Medusa) Step(seqs []int) StepStats {
	d, H, K := m.ds, m.H, m.o.Heads
	var rows int
	for _, s := range seqs {
		rows += d.SeqLen(s)
	}
	R := rows
	st := StepStats{Rows: R, Hits: make([]float64, K), Cnt: make([]float64, K)}
	h := make([]float32, R*H)
	r := 0
	for _, s := range seqs {
		d.HiddenRows(h[r*H:], d.Off[s], d.Off[s+1])
		r += d.SeqLen(s)
	}
	rmsNorm(h, h, m.target.Norm, nil, R, H, m.target.Cfg.RMSEps)
	TK := d.K
	tIDs, tProbs := make([]int32, R*TK), make([]float32, R*TK)
	for k := range K {
		teach := make([]teacher, R)
		w := float32(math.Pow(0.8, float64(k)) / float64(R))
		r := 0
		for _, s := range seqs {
			T := d.SeqLen(s)
			for t := range T {
				if t+1+k <= T-1 {
					ids, probs := tIDs[(r+t)*TK:(r+t+1)*TK], tProbs[(r+t)*TK:(r+t+1)*TK]
					d.Teacher(d.Off[s]+t+1+k, ids, probs)
					teach[r+t] = m.vocab.teacher(ids, probs, w)
				}
			}
			r += T
		}
		y := make([]float32, R*H)
		linear(y, h, m.W[k].W, m.B[k].W, R, H, H)
		z := append([]float32(nil), h...)
		for i, v := range y {
			z[i] += v * sigmoid(v)
		}
		dz := make([]float32, R*H)
		st.Loss += m.vocab.loss(z, dz, teach, &st, k)
		for i, v := range y { // dy = dz silu'(y)
			sg := sigmoid(v)
			dz[i] *= sg * (1 + v*(1-sg))
		}
		linearBack(nil, m.W[k].G, m.B[k].G, dz, h, m.W[k].W, R, H, H)
	}
	return st
}

// Export is the trained heads as the Medusa loader reads them (v2: the target's LM head).
func (m *Medusa) Export() *weights.Medusa {
	w := &weights.Medusa{Dim: m.H, Layers: 1, Layout: weights.MedusaV2}
	for k := range m.W {
		w.Blocks = append(w.Blocks, []weights.MedusaBlock{{W: append([]float32(nil), m.W[k].W...), B: append([]float32(nil), m.B[k].W...)}})
	}
	return w
}
