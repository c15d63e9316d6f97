package model

import (
	"encoding/binary"
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/runtime/webgpu"
)

// MaxChain is the most tokens one chain decodes.
const MaxChain = 16

// chainStride is a chain's words in the chain buffer: count, cap, tokens.
const chainStride = 2 + MaxChain

// chainState is what DecodeChains adds to a model: the chain_next dispatch and its buffers.
type chainState struct {
	prog    *runtime.Program // chain_next
	buf     *webgpu.Buffer   // [max_seqs, chainStride] u32
	staging *webgpu.Buffer   // map-read copy of buf
	q       logitsStage      // sampled chains' logits rows, slot i*MaxChain + j
}

// Chain is one sequence's part of a DecodeChains call.
type Chain struct {
	Seq    *kv.Sequence
	Tokens []int // fed first (at least one); the last one's logits give the first token
	K      int   // tokens to decode, 1..MaxChain
	// Sampling, at a temperature T, samples the chain's tokens from softmax(logits / T) (the
	// model's sampler with no other processing, with the target's key and noise at each
	// token's position: draw.go) and returns those distributions in Q; greedy, it takes the
	// argmax (Q nil).
	Sampling batch.Sampling
	Out      []int     // set by DecodeChains
	Q        []float32 // set by DecodeChains when sampling: [K, vocab]
}

// DecodeChains feeds each chain's tokens to its sequence, then decodes K tokens for each
// (greedily, or sampled: Chain.Sampling), every token the input of the next (a draft model
// drafting for several sequences).
// The tokens before each chain's last go in as prompt chunks (steps that do not sample, as
// few as the chunk allows); then the chains run together, one row per sequence, chained on
// the device by chain_next.wgsl: max K steps in one submit with one readback. A sequence's
// cache then holds its tokens and the first K-1 decoded ones. On error every cache is as it
// was.
func (m *Model) DecodeChains(chains []Chain) error {
	if len(chains) == 0 {
		return nil
	}
	before := make([]int, len(chains))
	undo := func() {
		for i, c := range chains {
			c.Seq.Truncate(before[i])
		}
	}
	for i, c := range chains {
		before[i] = c.Seq.Len()
		switch {
		case len(c.Tokens) == 0:
			return fmt.Errorf("%w: a chain with no tokens", batch.ErrBadInput)
		case c.K < 1 || c.K > MaxChain:
			return fmt.Errorf("%w: a chain of %d tokens (1..%d)", batch.ErrBadInput, c.K, MaxChain)
		case c.Seq.Len()+len(c.Tokens)+c.K-1 > m.Cfg.MaxSeq:
			return fmt.Errorf("%w: %d tokens after this chain, the context is %d", kv.ErrContextFull, c.Seq.Len()+len(c.Tokens)+c.K-1, m.Cfg.MaxSeq)
		}
	}
	if err := m.feedChains(chains); err != nil {
		undo()
		return err
	}
	for start := 0; start < len(chains); start += m.Opts.MaxSeqs {
		if err := m.chain(chains[start:min(len(chains), start+m.Opts.MaxSeqs)]); err != nil {
			undo()
			return err
		}
	}
	return nil
}

// feedChains runs every chain's tokens but the last as prompt chunks, in as few steps as the
// step's rows and sequences allow.
func (m *Model) feedChains(chains []Chain) error {
	fed := make([]int, len(chains))
	for {
		var steps []batch.SeqStep
		var idx []int
		rows := 0
		for i, c := range chains {
			left := len(c.Tokens) - 1 - fed[i]
			if left <= 0 || rows == m.Opts.PrefillChunk || len(steps) == m.Opts.MaxSeqs {
				continue
			}
			n := min(left, m.Opts.PrefillChunk-rows)
			steps = append(steps, batch.SeqStep{Seq: c.Seq, Tokens: c.Tokens[fed[i] : fed[i]+n]})
			idx = append(idx, i)
			rows += n
		}
		if len(steps) == 0 {
			return nil
		}
		if _, err := m.Step(steps); err != nil {
			return err
		}
		for j, i := range idx {
			fed[i] += len(steps[j].Tokens)
		}
	}
}

// chain runs the chains' decode steps (at most MaxSeqs chains) after their last tokens.
func (m *Model) chain(chains []Chain) error {
	if err := m.chainSetup(); err != nil {
		return err
	}
	steps := make([]batch.SeqStep, len(chains))
	kmax, need, sampled := 0, 0, false
	for i, c := range chains {
		steps[i] = batch.SeqStep{Seq: c.Seq, Tokens: c.Tokens[len(c.Tokens)-1:], Sample: true}
		if t := c.Sampling.Temperature; t > 0 {
			steps[i].Sampling = batch.Sampling{Temperature: t, Seed: c.Sampling.Seed, Choice: c.Sampling.Choice} // coupled: draw.go
			sampled = true
		}
		kmax = max(kmax, c.K)
		need += c.Seq.PagesNeeded(c.Seq.Len() + c.K)
	}
	if err := m.checkBatch(steps); err != nil {
		return err
	}
	if need > m.Pool().Free() {
		return fmt.Errorf("%w: the chains need %d pages, %d are free", kv.ErrPoolExhausted, need, m.Pool().Free())
	}
	pos0 := make([]int, len(chains))
	for i, c := range chains { // every page the chain writes, before the page tables go up
		pos0[i] = c.Seq.Len()
		if err := c.Seq.Reserve(pos0[i] + c.K); err != nil {
			panic(fmt.Sprintf("model: reserve after the page check: %v", err))
		}
	}
	sp, err := m.prepare(steps)
	if err != nil {
		return err
	}
	st := m.chainSt
	V := m.Cfg.Vocab
	if sampled {
		if err := st.q.ensure(m.d, "chain logits staging", V, m.Opts.MaxSeqs*MaxChain); err != nil {
			return err
		}
	}
	init := make([]uint32, chainStride*len(chains))
	for i, c := range chains {
		init[i*chainStride+1] = uint32(c.K)
	}
	st.buf.Write(0, runtime.U32Bytes(init))
	enc := m.d.NewEncoder()
	for j := range kmax {
		sp.prog.Encode(enc, &sp.step, nil)
		for i, c := range chains { // a sampled chain's logits row i: the distribution of its token j
			if c.Sampling.Temperature > 0 && j < c.K {
				st.q.keep(enc, m.logits, uint64(4*i*V), i*MaxChain+j)
			}
		}
		st.prog.Encode(enc, &sp.step, nil)
	}
	enc.Copy(st.buf, 0, st.staging, 0, uint64(4*len(init)))
	if err := enc.Submit(); err != nil {
		return err
	}
	raw := make([]byte, 4*len(init))
	if err := st.staging.Read(0, raw); err != nil {
		return err
	}
	var logits []byte
	if sampled {
		if logits, err = st.q.read(len(chains) * MaxChain); err != nil {
			return err
		}
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(raw[4*i:]) }
	for i := range chains {
		c := &chains[i]
		if n := int(word(i * chainStride)); n != c.K {
			return fmt.Errorf("model: a chain of %d steps recorded %d tokens", c.K, n)
		}
		c.Out = make([]int, c.K)
		for j := range c.Out {
			t := word(i*chainStride + 2 + j)
			if t == 0xffffffff {
				return fmt.Errorf("%w: the model produced non-finite logits at position %d", batch.ErrNonFinite, pos0[i]+j)
			}
			if int(t) >= m.Cfg.Vocab {
				return fmt.Errorf("model: sampler emitted token id %d outside the vocabulary of %d", t, m.Cfg.Vocab)
			}
			c.Out[j] = int(t)
		}
		c.Q = nil
		if t := c.Sampling.Temperature; t > 0 {
			c.Q = st.q.q(logits, i*MaxChain, c.K, 1/t, nil, V)
		}
		c.Seq.Commit(pos0[i] + c.K)
	}
	return nil
}

// chainSetup records the chain_next dispatch at the first chain.
func (m *Model) chainSetup() error {
	if m.chainSt != nil {
		return nil
	}
	c := &chainState{}
	var err error
	if c.buf, err = m.d.NewStorage("chain", uint64(4*chainStride*m.Opts.MaxSeqs)); err != nil {
		return err
	}
	if c.staging, err = m.d.CreateBuffer("chain staging", c.buf.Size, webgpu.UsageMapRead|webgpu.UsageCopyDst); err != nil {
		c.buf.Release()
		return err
	}
	if c.prog, err = m.d.NewProgram(); err == nil {
		err = c.prog.Add(runtime.KernelCall{Kernel: "chain_next",
			Params:  runtime.ChainParams{OutStride: uint32(m.Opts.MaxDraft + 2), ChainStride: chainStride},
			Buffers: []webgpu.Binding{{Buffer: m.out}, {Buffer: m.tokens}, {Buffer: m.rows}, {Buffer: m.seqs}, {Buffer: c.buf}},
			Grid:    func(s *runtime.StepBlock) (uint32, uint32, uint32) { return runtime.CeilDiv(s.NSeqs, 64), 1, 1 }})
	}
	if err != nil {
		c.release()
		return err
	}
	m.chainSt = c
	return nil
}

func (c *chainState) release() {
	c.q.release()
	for _, b := range []*webgpu.Buffer{c.buf, c.staging} {
		if b != nil {
			b.Release()
		}
	}
	if c.prog != nil {
		c.prog.Release()
	}
}
