package model

import (
	"encoding/binary"
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
)

// record builds the dispatch list of one forward step, reading like the maths. rows is the
// matmuls' block height (1: decode; the verified rows; 8: prefill, in blocks), lmRows the LM
// head's:
//
//	x = embed[tokens]                                  embed
//	for each layer:
//	    aux[:, j] = x   (layer j of Opts.AuxLayers)    copy_rows
//	    qkv = [Wq; Wk; Wv] rmsnorm(x) (+ b)            matmul NORM (+HAS_BIAS)
//	    q, k = rope(q, k); cache[pos] = k, v           rope_kv
//	    att = softmax(q k^T / sqrt(hd)) v              attention (paged, causal, GQA)
//	    x += Wo att                                    matmul ACCUM
//	    h = [Wgate; Wup] rmsnorm(x)                    matmul NORM
//	    x += Wdown (silu(gate) * up)                   matmul SWIGLU + ACCUM
//	logits = lm_head rmsnorm(x[last n_draft+1 rows])   matmul NORM + LAST_ROWS
//	out = rejection_sample(logits, drafts, q)          sample
//
// The RMSNorms ride in the matmuls that read their output: each workgroup gathers the row's
// sum of squares while it reads the row anyway, so a norm costs no pass and no dispatch.
func (m *Model) record(rows, lmRows int) (*runtime.Program, error) {
	c, o, d := m.Cfg, m.Opts, m.d
	p, err := d.NewProgram()
	if err != nil {
		return nil, err
	}
	eps := float32(c.RMSEps)
	hd := c.HeadDim
	qkvW := (c.NHeads + 2*c.NKVHeads) * hd
	if err := p.AddEmbed(m.embed, m.tokens, m.x); err != nil {
		return nil, err
	}
	for i, ly := range m.layers {
		name := func(s string) string { return fmt.Sprintf("layers.%d.%s", i, s) }
		for j, al := range o.AuxLayers {
			if al != i {
				continue
			}
			err := p.Add(runtime.KernelCall{
				Kernel: "copy_rows",
				Params: runtime.CopyRowsParams{Width: uint32(c.Dim), SrcStride: uint32(c.Dim),
					DstStride: uint32(len(o.AuxLayers) * c.Dim), DstOff: uint32(j * c.Dim)},
				Buffers: []webgpu.Binding{{Buffer: m.x}, {Buffer: m.aux}},
				Grid:    func(s *runtime.StepBlock) (uint32, uint32, uint32) { return runtime.CeilDiv(uint32(c.Dim), 64), s.M, 1 },
			})
			if err != nil {
				return nil, err
			}
		}
		steps := []func() error{
			func() error {
				return p.AddMat(name("qkv"), ly.qkv, m.x, m.qkv, qkvW, runtime.MatFusion{Norm: ly.attnNorm, Eps: eps, Bias: ly.qkvBias}, rows, m.dummy)
			},
			func() error { return p.AddAttention(&c, o.PageSize, rows, m.qkv, m.pageTable, ly.kc, ly.vc, m.att) },
			func() error {
				return p.AddMat(name("wo"), ly.wo, m.att, m.x, c.Dim, runtime.MatFusion{Accum: true}, rows, m.dummy)
			},
			func() error {
				return p.AddMat(name("w13"), ly.w13, m.x, m.h, 2*c.HiddenDim, runtime.MatFusion{Norm: ly.ffnNorm, Eps: eps}, rows, m.dummy)
			},
			func() error {
				return p.AddMat(name("w2"), ly.w2, m.h, m.x, c.Dim, runtime.MatFusion{SwiGLU: true, Accum: true}, rows, m.dummy)
			},
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return nil, err
			}
		}
	}
	if err := p.AddMat("lm_head", m.lmHead, m.x, m.logits, c.Vocab, runtime.MatFusion{Norm: m.norm, Eps: eps, LastRows: true}, lmRows, m.dummy); err != nil {
		return nil, err
	}
	err = p.Add(runtime.KernelCall{
		Kernel: "sample", Params: runtime.SampleParams{Vocab: uint32(c.Vocab)},
		Buffers: []webgpu.Binding{{Buffer: m.logits}, {Buffer: m.drafts}, {Buffer: m.q}, {Buffer: m.out}},
		Grid:    runtime.Fixed(1, 1, 1),
	})
	return p, err
}

// Sampling are a step's sampling settings.
type Sampling struct {
	Temperature float32 // <= 0: greedy
	TopK        int     // 0: off
	TopP        float32 // 0 or 1: off
	Seed        uint64
	SeqID       uint32
}

// Forward appends tokens to seq at positions seq.Len().., runs the model on them in one submit
// (or one per PrefillChunk of a long prompt), and samples on the device. With nDraft > 0 the
// last nDraft tokens are drafts to verify: the rejection sampler checks them against the
// target's logits (and the draft probabilities q, [nDraft, vocab], when given) and the result
// is the accepted drafts plus one recovered or bonus token. With nDraft == 0 it is the one
// token sampled after the last. The cache then holds all of tokens: the caller truncates the
// rejected drafts. Only the emitted token ids come back to the host.
func (m *Model) Forward(seq *runtime.Sequence, tokens []int, nDraft int, q []float32, s Sampling) ([]int, error) {
	c, o := m.Cfg, m.Opts
	if m.embed == nil {
		return nil, fmt.Errorf("model: %w (the model was released)", runtime.ErrClosed)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrBadInput)
	}
	if nDraft < 0 || nDraft > o.MaxDraft || nDraft >= len(tokens) {
		return nil, fmt.Errorf("%w: %d drafts among %d tokens (at most %d)", ErrBadInput, nDraft, len(tokens), o.MaxDraft)
	}
	if q != nil && len(q) != nDraft*c.Vocab {
		return nil, fmt.Errorf("%w: q has %d values, want %d x %d", ErrBadInput, len(q), nDraft, c.Vocab)
	}
	if end := seq.Len() + len(tokens); end > c.MaxSeq {
		return nil, fmt.Errorf("%w: %d tokens after this step, the context is %d", runtime.ErrContextFull, end, c.MaxSeq)
	}
	ids := make([]uint32, len(tokens))
	for i, t := range tokens {
		if t < 0 || t >= c.Vocab {
			return nil, fmt.Errorf("%w: token id %d outside the vocabulary of %d", ErrBadInput, t, c.Vocab)
		}
		ids[i] = uint32(t)
	}
	step := runtime.StepBlock{NDraft: uint32(nDraft), Seq: s.SeqID, SeedLo: uint32(s.Seed), SeedHi: uint32(s.Seed >> 32),
		Temperature: s.Temperature, TopP: s.TopP, TopK: uint32(max(s.TopK, 0)), Vocab: uint32(c.Vocab)}
	if step.TopP <= 0 {
		step.TopP = 1
	}
	if q != nil {
		step.HasQ = 1
		m.q.Write(0, runtime.F32Bytes(q))
	}
	if nDraft > 0 {
		m.drafts.Write(0, runtime.U32Bytes(ids[len(ids)-nDraft:]))
	}
	// Long inputs go in chunks; the drafts and the token before them always share the last
	// chunk, since the sampler reads the last n_draft + 1 logits rows of one step.
	head := ids
	var tail []uint32
	if nDraft > 0 {
		head, tail = ids[:len(ids)-nDraft-1], ids[len(ids)-nDraft-1:]
	}
	var chunks [][]uint32
	for start := 0; start < len(head); start += o.PrefillChunk {
		chunks = append(chunks, head[start:min(len(head), start+o.PrefillChunk)])
	}
	if tail != nil {
		chunks = append(chunks, tail)
	}
	before := seq.Len()
	for i, chunk := range chunks {
		if err := m.run(seq, chunk, &step, i == len(chunks)-1); err != nil {
			seq.Truncate(before) // a failed step leaves the cache as it was
			return nil, err
		}
	}
	raw := make([]byte, 4*max(nDraft+2, 3))
	if err := m.staging.Read(0, raw); err != nil {
		seq.Truncate(before)
		return nil, err
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(raw[4*i:]) }
	n := int(word(0))
	if n == 0 { // the sampler found a NaN or an infinity in logits row word(2)
		seq.Truncate(before)
		kind := map[uint32]string{1: "NaN", 2: "infinite", 3: "NaN and infinite"}[word(1)]
		return nil, fmt.Errorf("%w: the model produced %s logits at position %d", ErrNonFinite, kind, before+len(ids)-nDraft-1+int(word(2)))
	}
	if n > nDraft+1 {
		return nil, fmt.Errorf("runtime: sampler emitted %d tokens for %d drafts", n, nDraft)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(word(i + 1))
		if out[i] >= c.Vocab {
			seq.Truncate(before)
			return nil, fmt.Errorf("runtime: sampler emitted token id %d outside the vocabulary of %d", out[i], c.Vocab)
		}
	}
	return out, nil
}

// run reserves pages for chunk, writes the step's inputs and submits one forward step.
func (m *Model) run(seq *runtime.Sequence, chunk []uint32, step *runtime.StepBlock, last bool) error {
	pos0 := seq.Len()
	copies, err := seq.Reserve(pos0 + len(chunk))
	if err != nil {
		return err
	}
	step.M, step.Pos0 = uint32(len(chunk)), uint32(pos0)
	pages := make([]uint32, len(seq.Pages()))
	for i, p := range seq.Pages() {
		pages[i] = uint32(p)
	}
	m.pageTable.Write(0, runtime.U32Bytes(pages))
	m.tokens.Write(0, runtime.U32Bytes(chunk))
	enc := m.d.NewEncoder()
	pageBytes := uint64(m.Opts.PageSize * m.Cfg.NKVHeads * m.Cfg.HeadDim * 4)
	for _, cp := range copies {
		for _, ly := range m.layers {
			// WebGPU copies never have the same source and destination buffer: go through scratch.
			for _, b := range []*webgpu.Buffer{ly.kc, ly.vc} {
				enc.Copy(b, uint64(cp.From)*pageBytes, m.scratch, 0, pageBytes)
				enc.Copy(m.scratch, 0, b, uint64(cp.To)*pageBytes, pageBytes)
			}
		}
	}
	prog, err := m.program(len(chunk), int(step.NDraft))
	if err != nil {
		return err
	}
	prog.Encode(enc, step, nil)
	if last {
		enc.Copy(m.out, 0, m.staging, 0, m.staging.Size)
	}
	if err := enc.Submit(); err != nil {
		return err
	}
	seq.Commit(pos0 + len(chunk))
	m.lastPos0, m.lastM = pos0, len(chunk)
	return nil
}

// verifyRows are the block heights of the verify programs: a step of M rows (M-1 drafts)
// runs the smallest that holds them all, recorded at its first use.
var verifyRows = []int{2, 3, 5, 9, 16}

// program returns the program for a step of rows tokens, nDraft of them drafts: decode (one
// row), a verify program (the rows in one block), or prefill.
func (m *Model) program(rows, nDraft int) (*runtime.Program, error) {
	if rows == 1 {
		return m.decode, nil
	}
	for i, vr := range verifyRows {
		if rows > vr || (nDraft == 0 && rows > 8) {
			continue
		}
		if m.verify[i] == nil {
			p, err := m.record(vr, vr)
			if err != nil {
				return nil, err
			}
			m.verify[i] = p
		}
		return m.verify[i], nil
	}
	return m.prefill, nil
}

// Dispatches is the number of dispatches of one decode step.
func (m *Model) Dispatches() int { return m.decode.Len() }

// Logits reads the logits rows of the last step ([n_draft + 1, vocab]); for tests and tools.
func (m *Model) Logits(rows int) ([]float32, error) {
	return m.d.ReadF32(m.logits, rows*m.Cfg.Vocab)
}
