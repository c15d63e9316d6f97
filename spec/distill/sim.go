package distill

import (
	"fmt"

	"github.com/wspec/wspec/weights"
)

// The drafters as the scheduler drives them (spec/neural's eagle.go, medusa.go and
// draft_model.go on the device), run on the CPU for Simulate.

// SimEagle drafts with an EAGLE-1 or EAGLE-3 head as runtime/model's Eagle does: before each
// draft it catches up on the positions the target verified since the last one (token
// x_{p+1} and the target's feature of position p), then drafts k depths greedily.
type SimEagle struct {
	h         *EagleHead
	t         *Llama
	aux       int // EAGLE-3: the aux layers the features hold (3), 0 for EAGLE-1
	st        *EagleState
	seq       *EvalSeq
	committed int
}

// NewSimEagle runs head h next to target t; seqs must carry the head's aux features.
func NewSimEagle(h *EagleHead, t *Llama) *SimEagle {
	s := &SimEagle{h: h, t: t}
	if h.W.Kind == weights.EagleKind3 {
		s.aux = 3
	}
	return s
}

func (s *SimEagle) Name() string { return s.h.W.Kind }

// Head is the head the drafter runs.
func (s *SimEagle) Head() *EagleHead { return s.h }

func (s *SimEagle) Begin(seq *EvalSeq) {
	s.seq, s.st, s.committed = seq, s.h.NewState(), 0
}

func (s *SimEagle) Propose(ctx []int, k int) []int {
	N, H := len(ctx), s.t.Cfg.Dim
	lo, hi := s.committed, N-1 // catch-up positions lo..hi-1
	var feats []float32
	width := H
	if s.aux > 0 {
		width = 3 * H
		feats = s.seq.Aux[lo*width : hi*width]
	} else {
		feats = make([]float32, (hi-lo)*H)
		rmsNorm(feats, s.seq.Hidden[lo*H:hi*H], s.t.W.Norm, nil, hi-lo, H, s.t.Cfg.RMSEps)
	}
	drafts := s.st.Draft(ctx[lo+1:hi+1], feats, width, k)
	s.committed = hi
	return drafts
}

func (s *SimEagle) Accept(ctx []int) {}

// SimMedusa drafts with Medusa heads on the target's last hidden state of position
// len(ctx)-2 (the newest position whose features the target computed), head k giving the
// token k+1 places after ctx's newest.
type SimMedusa struct {
	m     *weights.Medusa
	t     *Llama
	seq   *EvalSeq
	heads []*Packed
	outs  []*Packed
}

// NewSimMedusa runs m next to target t (whose LM head serves heads without one).
func NewSimMedusa(m *weights.Medusa, t *Llama) (*SimMedusa, error) {
	if m.Dim != t.Cfg.Dim {
		return nil, fmt.Errorf("distill: Medusa heads of width %d for a target of %d", m.Dim, t.Cfg.Dim)
	}
	s := &SimMedusa{m: m, t: t}
	for k, blocks := range m.Blocks {
		if len(blocks) != 1 {
			return nil, fmt.Errorf("distill: %w: Medusa heads of %d blocks (the simulation runs one)", weights.ErrUnsupported, len(blocks))
		}
		s.heads = append(s.heads, PackWeight(blocks[0].W, m.Dim, m.Dim))
		if m.Out != nil {
			s.outs = append(s.outs, PackWeight(m.Out[k], m.Vocab, m.Dim))
		} else {
			s.outs = append(s.outs, t.head)
		}
	}
	return s, nil
}

func (s *SimMedusa) Name() string       { return "medusa" }
func (s *SimMedusa) Begin(seq *EvalSeq) { s.seq = seq }
func (s *SimMedusa) Accept(ctx []int)   {}
func (s *SimMedusa) Propose(ctx []int, k int) []int {
	H := s.m.Dim
	p := len(ctx) - 2
	h := make([]float32, H)
	rmsNorm(h, s.seq.Hidden[p*H:(p+1)*H], s.t.W.Norm, nil, 1, H, s.t.Cfg.RMSEps)
	var drafts []int
	for j := range min(k, len(s.heads)) {
		y := make([]float32, H)
		GemmPacked(1, h, s.heads[j], y, false)
		z := make([]float32, H)
		for i := range z {
			v := y[i] + s.m.Blocks[j][0].B[i]
			z[i] = h[i] + v*sigmoid(v)
		}
		logits := make([]float32, s.outs[j].N)
		GemmPacked(1, z, s.outs[j], logits, false)
		drafts = append(drafts, argmax(logits))
	}
	return drafts
}

// SimDraftModel drafts with a small model of the target's vocabulary: it feeds the tokens of
// ctx its cache lacks, then decodes k tokens greedily; Accept drops the rejected drafts.
type SimDraftModel struct {
	m     *Llama
	cache *KVCache
	fed   []int
}

func NewSimDraftModel(m *Llama) *SimDraftModel { return &SimDraftModel{m: m} }

func (s *SimDraftModel) Name() string { return "draft_model" }
func (s *SimDraftModel) Begin(seq *EvalSeq) {
	s.cache, s.fed = s.m.NewCache(), nil
}

func (s *SimDraftModel) rollback(n int) {
	s.fed = s.fed[:n]
	s.cache.Truncate(n)
}

func (s *SimDraftModel) Propose(ctx []int, k int) []int {
	s.rollback(min(commonPrefix(s.fed, ctx), len(ctx)-1))
	feed := ctx[len(s.fed):]
	var drafts []int
	for len(drafts) < k {
		rows := make([]Row, len(feed))
		for i, tok := range feed {
			rows[i] = Row{Cache: s.cache, Token: tok}
		}
		out, err := s.m.Forward(rows, nil, true)
		if err != nil {
			return drafts // the context is full
		}
		s.fed = append(s.fed, feed...)
		V := s.m.Cfg.Vocab
		tok := argmax(out.Logits[(len(feed)-1)*V:])
		drafts = append(drafts, tok)
		feed = []int{tok}
	}
	return drafts
}

func (s *SimDraftModel) Accept(ctx []int) { s.rollback(commonPrefix(s.fed, ctx)) }

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
