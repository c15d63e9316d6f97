package ref

import (
	"fmt"
	"math"
	"slices"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/weights"
)

// Model is the pure-Go reference of the device model's batched step (runtime/model's
// Model.Step), so the scheduler and everything above it can run without a device: each
// sequence's new tokens go through a forward pass of its own (a SeqState, kept at the
// sequence's length in the page pool, so a Truncate of the sequence drops its cache), each
// sampling sequence's rows are processed (logit bias, then the penalties, the drafts before a
// row counting as generated) and verified by Verify, keyed as the device keys them, and the
// feature rows of a sequence whose step names a slot are kept in it, as the device keeps them.
type Model struct {
	pool   *kv.PagePool
	lim    batch.Limits
	opts   ModelOptions
	states map[*kv.Sequence]SeqState
	slots  []modelSlot
	// written is the token each page slot holds, so that a sequence which starts with pages
	// of the prefix cache (kv.Sequence.MatchPrefix) gets a cache of those tokens.
	written map[int][]int
	// Verify is the rejection sampler (RejectionSample); tests swap in broken ones to show
	// that their checks catch them.
	Verify func(rows []float32, drafts []int, q []float32, p kernelref.SamplingParams, seed uint64, seq, pos0 uint32) []int
	// Steps counts the steps run.
	Steps int
}

// SeqState is one sequence's forward pass: its cache and the model that extends it.
type SeqState interface {
	Len() int
	Truncate(n int)
	// Forward appends tokens [M] and returns their logits [M, vocab] and feature rows
	// [M, width] (see ModelOptions.AuxLayers; nil when the model keeps no features).
	Forward(tokens []int) (logits, features []float32)
}

// ModelOptions are a reference model's features and forward pass.
type ModelOptions struct {
	// AuxLayers are the layers whose entering residual streams are the features, side by
	// side; without them the feature is the residual after the last layer (model.Options).
	AuxLayers []int
	// FeatureSlots is the number of feature slots (0: none).
	FeatureSlots int
	// NewState starts a sequence's forward pass (default: a LlamaState of the weights).
	NewState func() SeqState
}

type modelSlot struct {
	used     bool
	pos0, n  int
	features []float32
}

// NewModel makes the reference model of w with a pool of pages of pageSize slots; its steps
// take what lim says (MaxSeq and Vocab are w's).
func NewModel(w *weights.LlamaWeights, pages, pageSize int, lim batch.Limits) *Model {
	return NewModelWith(w.Cfg, pages, pageSize, lim, ModelOptions{NewState: func() SeqState { return &llamaSeq{NewLlamaState(w), nil, w} }})
}

// NewModelWith is NewModel with features and a forward pass of the caller's (for a model of
// configuration cfg).
func NewModelWith(cfg weights.Config, pages, pageSize int, lim batch.Limits, o ModelOptions) *Model {
	lim.MaxSeq, lim.Vocab = cfg.MaxSeq, cfg.Vocab
	return &Model{pool: kv.NewPagePool(pages, pageSize), lim: lim, opts: o, states: map[*kv.Sequence]SeqState{}, written: map[int][]int{},
		slots: make([]modelSlot, o.FeatureSlots),
		Verify: func(rows []float32, drafts []int, q []float32, p kernelref.SamplingParams, seed uint64, seq, pos0 uint32) []int {
			out, _ := kernelref.RejectionSample(rows, drafts, q, p, seed, seq, pos0)
			return out
		}}
}

func (m *Model) Pool() *kv.PagePool   { return m.pool }
func (m *Model) Limits() batch.Limits { return m.lim }

// Step checks the batch as the device does (sequences, rows, sampled rows, pages), then runs
// each sequence's part.
func (m *Model) Step(steps []batch.SeqStep) ([]batch.StepOut, error) {
	need, rows, logits := 0, 0, 0
	for _, st := range steps {
		need += st.Seq.PagesNeeded(st.Seq.Len() + len(st.Tokens))
		rows += len(st.Tokens)
		if st.Sample {
			logits += st.NDraft + 1
		}
		switch {
		case len(st.Tokens) == 0 || st.NDraft < 0 || st.NDraft >= len(st.Tokens) || st.NDraft > m.lim.MaxDraft:
			return nil, fmt.Errorf("%w: %d drafts among %d tokens", batch.ErrBadInput, st.NDraft, len(st.Tokens))
		case st.Mask != nil && (!st.Sample || len(st.Mask) != (st.NDraft+1)*batch.MaskWords(m.lim.Vocab)):
			return nil, fmt.Errorf("%w: a mask of %d words for %d rows", batch.ErrBadInput, len(st.Mask), st.NDraft+1)
		case st.Score && (!st.Sample || !st.Sampling.Logprobs):
			return nil, fmt.Errorf("%w: a step that scores its drafts without sampling logprobs", batch.ErrBadInput)
		case st.Seq.Len()+len(st.Tokens) > m.lim.MaxSeq:
			return nil, fmt.Errorf("%w: %d tokens", kv.ErrContextFull, st.Seq.Len()+len(st.Tokens))
		}
	}
	switch {
	case len(steps) == 0 || len(steps) > m.lim.MaxSeqs || rows > m.lim.StepRows || logits > m.lim.MaxLogitRows:
		return nil, fmt.Errorf("%w: %d sequences, %d rows, %d logits rows", batch.ErrBadInput, len(steps), rows, logits)
	case need > m.pool.Free():
		return nil, fmt.Errorf("%w: %d pages needed, %d free", kv.ErrPoolExhausted, need, m.pool.Free())
	}
	m.Steps++
	for s := range m.states { // forget released sequences
		if s.Len() == 0 && len(s.Pages()) == 0 {
			delete(m.states, s)
		}
	}
	outs := make([]batch.StepOut, len(steps))
	for i, st := range steps {
		outs[i] = m.step(st)
	}
	return outs, nil
}

// step runs one sequence's part of a step.
func (m *Model) step(st batch.SeqStep) batch.StepOut {
	V := m.lim.Vocab
	s := m.states[st.Seq]
	if s == nil { // a new sequence, perhaps starting with shared pages: compute their tokens
		s = m.opts.NewState()
		m.states[st.Seq] = s
		if n := st.Seq.Len(); n > 0 {
			s.Forward(m.tokens(st.Seq, n))
		}
	}
	if s == nil || s.Len() < st.Seq.Len() {
		panic("ref.Model: a sequence whose cache the reference did not compute")
	}
	s.Truncate(st.Seq.Len())
	pos0 := st.Seq.Len()
	if err := st.Seq.Reserve(pos0 + len(st.Tokens)); err != nil {
		panic(err) // counted above
	}
	st.Seq.Commit(pos0 + len(st.Tokens))
	ps := m.pool.PageSize
	for i, tok := range st.Tokens {
		page := st.Seq.Pages()[(pos0+i)/ps]
		if m.written[page] == nil {
			m.written[page] = make([]int, ps)
		}
		m.written[page][(pos0+i)%ps] = tok
	}
	all, feats := s.Forward(st.Tokens)
	if st.Keep > 0 {
		m.slots[st.Keep-1].pos0, m.slots[st.Keep-1].n, m.slots[st.Keep-1].features = pos0, len(st.Tokens), feats
	}
	if !st.Sample {
		return batch.StepOut{}
	}
	n, nd := len(st.Tokens), st.NDraft
	drafts := st.Tokens[n-nd:]
	W := batch.MaskWords(V)
	q := st.Q
	if q != nil && st.Mask != nil { // each draft's q renormalised over its row's allowed tokens
		q = make([]float32, 0, len(st.Q))
		for j := range nd {
			q = append(q, kernelref.MaskQ(st.Q[j*V:(j+1)*V], st.Mask[j*W:(j+1)*W])...)
		}
	}
	rows := make([]float32, 0, (nd+1)*V) // the processed rows that sample
	for j := 0; j <= nd; j++ {
		row := process(all[(n-nd-1+j)*V:(n-nd+j)*V], st.Sampling, st.Adj, drafts[:j])
		if st.Mask != nil {
			kernelref.ApplyMask(row, st.Mask[j*W:(j+1)*W])
		}
		for _, z := range row {
			if math.IsNaN(float64(z)) || math.IsInf(float64(z), 0) {
				return batch.StepOut{Err: fmt.Errorf("%w: the model produced non-finite logits at position %d", batch.ErrNonFinite, pos0+n-nd-1+j)}
			}
		}
		rows = append(rows, row...)
	}
	sm := st.Sampling
	p := kernelref.SamplingParams{Temperature: sm.Temperature, TopK: sm.TopK, TopP: sm.TopP, MinP: sm.MinP}
	out := batch.StepOut{Tokens: m.Verify(rows, drafts, q, p, sm.Seed, sm.Choice, uint32(pos0+n-nd))}
	if sm.Logprobs {
		for i, tok := range out.Tokens {
			out.Logprobs = append(out.Logprobs, rowLogprob(rows[i*V:(i+1)*V], tok, sm.TopLogprobs))
		}
	}
	if st.Score && sm.Logprobs {
		for j, d := range drafts {
			out.Scores = append(out.Scores, rowLogprob(rows[j*V:(j+1)*V], d, sm.TopLogprobs))
		}
	}
	return out
}

// rowLogprob is a processed row's logprob of tok and its top likeliest tokens.
func rowLogprob(row []float32, tok, top int) batch.TokenLogprob {
	lp, ids, lps := kernelref.Logprobs(row, tok, top)
	tl := batch.TokenLogprob{Logprob: lp, Rank: kernelref.Rank(row, tok)}
	for k := range ids {
		tl.Top = append(tl.Top, batch.TopLogprob{Token: ids[k], Logprob: lps[k]})
	}
	return tl
}

// tokens are the first n tokens the pages of seq hold.
func (m *Model) tokens(seq *kv.Sequence, n int) []int {
	ps := m.pool.PageSize
	out := make([]int, n)
	for p := range out {
		out[p] = m.written[seq.Pages()[p/ps]][p%ps]
	}
	return out
}

// process applies a sequence's logit adjustments to one row, as the device does: the bias,
// then the penalties of the tokens adj lists (with their counts among the generated and
// whether they are in the prompt) and of the drafts before the row (generated too).
func process(row []float32, sm batch.Sampling, adj []batch.Adj, draftsBefore []int) []float32 {
	out := slices.Clone(row)
	pen := kernelref.Penalties{Presence: sm.PresencePenalty, Frequency: sm.FrequencyPenalty, Repetition: sm.RepetitionPenalty}
	count := map[int]int{}
	inPrompt := map[int]bool{}
	for _, a := range adj {
		t := int(a.Token)
		out[t] += a.Bias
		count[t] += int(a.Count) // an entry even at 0: a prompt token's repetition penalty
		inPrompt[t] = a.Prompt != 0
	}
	for _, d := range draftsBefore {
		count[d]++
	}
	for t := range count { // every listed token and every draft before the row, once
		out[t] = kernelref.Penalize(out[t], count[t], inPrompt[t], pen)
	}
	return out
}

// llamaSeq is the default SeqState: a LlamaState whose features are the hidden states aux
// asks for.
type llamaSeq struct {
	*LlamaState
	aux []int
	w   *weights.LlamaWeights
}

func (s *llamaSeq) Forward(tokens []int) ([]float32, []float32) {
	logits, hidden := s.LlamaState.Forward(tokens)
	c := s.w.Cfg
	if len(s.aux) == 0 {
		return logits, hidden[c.NLayers-1]
	}
	M := len(tokens)
	feats := make([]float32, M*len(s.aux)*c.Dim)
	emb := kernelref.Embed(s.w.Embed, tokens, c.Dim)
	for j, l := range s.aux {
		src := emb
		if l > 0 {
			src = hidden[l-1]
		}
		for r := range M {
			copy(feats[(r*len(s.aux)+j)*c.Dim:(r*len(s.aux)+j+1)*c.Dim], src[r*c.Dim:(r+1)*c.Dim])
		}
	}
	return logits, feats
}

// NewSlot takes a free feature slot.
func (m *Model) NewSlot() (batch.Slot, error) {
	for i := range m.slots {
		if !m.slots[i].used {
			m.slots[i] = modelSlot{used: true}
			return batch.Slot(i + 1), nil
		}
	}
	return 0, fmt.Errorf("%w: all %d feature slots in use", batch.ErrBadInput, len(m.slots))
}

// ReleaseSlot frees a slot (0 or twice: harmless).
func (m *Model) ReleaseSlot(s batch.Slot) {
	if s > 0 && int(s) <= len(m.slots) {
		m.slots[s-1] = modelSlot{}
	}
}

// Slot returns what slot s holds: the feature rows [n, width] of positions pos0 .. pos0+n.
func (m *Model) Slot(s batch.Slot) (pos0, n int, features []float32) {
	st := m.slots[s-1]
	return st.pos0, st.n, st.features
}
