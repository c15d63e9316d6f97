package model

import (
	"encoding/binary"
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
)

// MaxChain is the most tokens one DecodeChain decodes.
const MaxChain = 16

// chainState is what DecodeChain adds to a model: the chain_next dispatch and its buffers.
type chainState struct {
	prog    *runtime.Program // chain_next
	buf     *webgpu.Buffer   // [1 + MaxChain] u32: count, tokens
	staging *webgpu.Buffer   // map-read copy of buf
}

// DecodeChain feeds tokens to seq, then decodes k tokens greedily, each the input of the next,
// all in one submit with one readback (a draft model drafting k tokens: k decode steps chained
// on the device by chain_next.wgsl, rather than k submits and k readbacks). The cache then holds
// tokens and the first k-1 decoded tokens. A failed call leaves the cache as it was.
func (m *Model) DecodeChain(seq *runtime.Sequence, tokens []int, k int) ([]int, error) {
	switch {
	case len(tokens) == 0:
		return nil, fmt.Errorf("%w: no tokens", ErrBadInput)
	case k < 1 || k > MaxChain:
		return nil, fmt.Errorf("%w: a chain of %d tokens (1..%d)", ErrBadInput, k, MaxChain)
	case seq.Len()+len(tokens)+k-1 > m.Cfg.MaxSeq:
		return nil, fmt.Errorf("%w: %d tokens after this chain, the context is %d", runtime.ErrContextFull, seq.Len()+len(tokens)+k-1, m.Cfg.MaxSeq)
	}
	before := seq.Len()
	// All tokens but the last, as prompt chunks that do not sample.
	for start := 0; start < len(tokens)-1; {
		end := min(len(tokens)-1, start+m.Opts.PrefillChunk)
		if _, err := m.Step([]SeqStep{{Seq: seq, Tokens: tokens[start:end]}}); err != nil {
			seq.Truncate(before)
			return nil, err
		}
		start = end
	}
	out, err := m.chain(seq, tokens[len(tokens)-1], k)
	if err != nil {
		seq.Truncate(before)
	}
	return out, err
}

// chain runs k chained decode steps after token at the end of seq.
func (m *Model) chain(seq *runtime.Sequence, token, k int) ([]int, error) {
	if err := m.chainSetup(); err != nil {
		return nil, err
	}
	batch := []SeqStep{{Seq: seq, Tokens: []int{token}, Sample: true}}
	if err := m.checkBatch(batch); err != nil {
		return nil, err
	}
	pos0 := seq.Len()
	if need := seq.PagesNeeded(pos0 + k); need > m.Pool.Free() {
		return nil, fmt.Errorf("%w: the chain needs %d pages, %d are free", runtime.ErrPoolExhausted, need, m.Pool.Free())
	}
	copies, err := seq.Reserve(pos0 + k) // every page the chain writes, before the page table goes up
	if err != nil {
		return nil, err
	}
	sp, err := m.prepare(batch)
	if err != nil {
		return nil, err
	}
	c := m.chainSt
	c.buf.Write(0, runtime.U32Bytes([]uint32{0}))
	enc := m.d.NewEncoder()
	m.encodeCopies(enc, append(copies, sp.copies...))
	for range k {
		sp.prog.Encode(enc, &sp.step, nil)
		c.prog.Encode(enc, &sp.step, nil)
	}
	enc.Copy(c.buf, 0, c.staging, 0, uint64(4*(1+k)))
	if err := enc.Submit(); err != nil {
		return nil, err
	}
	delete(m.last, seq)
	raw := make([]byte, 4*(1+k))
	if err := c.staging.Read(0, raw); err != nil {
		return nil, err
	}
	if n := binary.LittleEndian.Uint32(raw); int(n) != k {
		return nil, fmt.Errorf("runtime: a chain of %d steps recorded %d tokens", k, n)
	}
	out := make([]int, k)
	for i := range out {
		t := binary.LittleEndian.Uint32(raw[4*(1+i):])
		if t == 0xffffffff {
			return nil, fmt.Errorf("%w: the model produced non-finite logits at position %d", ErrNonFinite, pos0+i)
		}
		if int(t) >= m.Cfg.Vocab {
			return nil, fmt.Errorf("runtime: sampler emitted token id %d outside the vocabulary of %d", t, m.Cfg.Vocab)
		}
		out[i] = int(t)
	}
	seq.Commit(pos0 + k)
	return out, nil
}

// chainSetup records the chain_next dispatch at the first chain.
func (m *Model) chainSetup() error {
	if m.chainSt != nil {
		return nil
	}
	c := &chainState{}
	var err error
	if c.buf, err = m.d.NewStorage("chain", 4*(1+MaxChain)); err != nil {
		return err
	}
	if c.staging, err = m.d.CreateBuffer("chain staging", c.buf.Size, webgpu.UsageMapRead|webgpu.UsageCopyDst); err != nil {
		c.buf.Release()
		return err
	}
	if c.prog, err = m.d.NewProgram(); err == nil {
		err = c.prog.Add(runtime.KernelCall{Kernel: "chain_next", Params: runtime.ChainParams{Cap: MaxChain},
			Buffers: []webgpu.Binding{{Buffer: m.out}, {Buffer: m.tokens}, {Buffer: m.rows}, {Buffer: m.seqs}, {Buffer: c.buf}},
			Grid:    runtime.Fixed(1, 1, 1)})
	}
	if err != nil {
		c.release()
		return err
	}
	m.chainSt = c
	return nil
}

func (c *chainState) release() {
	for _, b := range []*webgpu.Buffer{c.buf, c.staging} {
		if b != nil {
			b.Release()
		}
	}
	if c.prog != nil {
		c.prog.Release()
	}
}
