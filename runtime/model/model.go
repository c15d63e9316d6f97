// Package model is a Llama-family decoder on the WebGPU device: its weights and paged KV
// cache, the recorded programs of a step (decode, verify, prefill), Step (one forward pass
// over the rows of several sequences and the device's sampler, in one submit), the feature
// slots drafters read, and the device-side drafter heads (EAGLE, EAGLE-3, Medusa) and the
// draft model's chained decoding. It runs what the scheduler (spec/sched) plans; runtime/ref
// is its pure-Go reference.
package model

import (
	"fmt"
	"unsafe"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// Options size the device model.
type Options struct {
	Weights      wgsl.WeightType // f32 or f16 weight storage (activations are f32)
	KVType       wgsl.WeightType // f32 or f16 KV cache (f16 needs the device's shader-f16)
	PageSize     int             // KV slots per page (default 16)
	Pages        int             // pages in the pool (default: enough for 2 full contexts)
	MaxDraft     int             // most draft tokens one sequence verifies in a step (default 8)
	PrefillChunk int             // most rows (tokens of all sequences) in one step (default 128)
	MaxSeqs      int             // most sequences in one step (default 16)
	MaxLogitRows int             // most rows sampled in one step, all sequences (default 64)
	// FirstRun, when set, is called before the first step that runs one of the model's
	// programs (each step height has its own), with what it is for; the step calls the
	// function it returns when it is done. A CPU adapter compiles a program's kernels at its
	// first run: seconds, the first time on a machine (the driver caches them).
	FirstRun func(what string) (done func())
	// Progress, when set, is told how many bytes of weights have been read of how many.
	Progress weights.Progress
	// AuxLayers asks for snapshots of the residual stream entering these layers, for every
	// row of a step, side by side ([chunk, len(AuxLayers) * dim]): EAGLE-3's features.
	AuxLayers []int
	// FeatureSlots is the number of feature slots (see features.go): one per sequence that
	// drafts with a head reading the target's features at once (0: none; SlotPerSequence:
	// MaxSeqs, one for every sequence a step can hold).
	FeatureSlots int
	// DraftQ keeps room for the distributions sampled drafts were drawn from
	// (batch.SeqStep.Q: MaxLogitRows x vocab floats, 67 MB for Gemma 3's vocabulary); without
	// it a step with Q is refused. For drafters that return q (spec.Needs.DraftQ).
	DraftQ bool
}

// SlotPerSequence as Options.FeatureSlots gives every sequence a step can hold a slot.
const SlotPerSequence = -1

// Defaults of Options.
const (
	DefaultPageSize = 16
	DefaultMaxDraft = 8
	DefaultMaxSeqs  = 16
)

func (o *Options) defaults(cfg *weights.Config) {
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Pages <= 0 {
		o.Pages = 2 * ((cfg.MaxSeq + o.PageSize - 1) / o.PageSize)
	}
	if o.MaxDraft <= 0 {
		o.MaxDraft = DefaultMaxDraft
	}
	if o.MaxDraft > 15 {
		o.MaxDraft = 15 // a verify program holds at most 16 rows
	}
	if o.PrefillChunk <= 16 {
		o.PrefillChunk = 128
	}
	if o.MaxSeqs <= 0 {
		o.MaxSeqs = DefaultMaxSeqs
	}
	if o.MaxLogitRows <= 0 {
		o.MaxLogitRows = 64
	}
	o.MaxLogitRows = max(o.MaxLogitRows, o.MaxDraft+1)
	o.MaxSeqs = min(o.MaxSeqs, o.PrefillChunk, o.MaxLogitRows)
	if o.FeatureSlots < 0 {
		o.FeatureSlots = o.MaxSeqs
	}
}

type deviceLayer struct {
	attnNorm, ffnNorm *webgpu.Buffer  // [dim] f32
	qkv               *runtime.Linear // [(n_heads + 2 n_kv) * hd, dim]: wq, wk, wv stacked
	qkvBias           *webgpu.Buffer  // [(n_heads + 2 n_kv) * hd] or nil
	qkNorm            *webgpu.Buffer  // [2, hd] f32: q_norm, k_norm (qwen3, Gemma) or nil
	postAttn, postFFN *webgpu.Buffer  // [dim] f32: Gemma's norms of the attention's and MLP's outputs, or nil
	wo                *runtime.Linear // [dim, n_heads * hd]
	w13               *runtime.Linear // [2 hidden, dim]: gate, up stacked
	w2                *runtime.Linear // [dim, hidden]
	kc, vc            *webgpu.Buffer  // [n_pages, page_size, n_kv, hd] of Opts.KVType
}

// Model is a Llama-family decoder on the device with its paged KV cache. One Step is one
// submit over the rows of several sequences: embed, 6 dispatches per layer, the LM head on
// the rows that sample, and the two halves of the sampler.
type Model struct {
	d    *runtime.Device
	Cfg  weights.Config
	Opts Options
	pool *kv.PagePool

	embed  *runtime.Linear // [vocab, dim]
	layers []deviceLayer   // [n_layers]
	norm   *webgpu.Buffer  // [dim]
	lmHead *runtime.Linear // [vocab, dim] (the embedding's buffers when tied)

	// Activations, sized for PrefillChunk rows.
	x, qkv, att, h *webgpu.Buffer // [chunk, dim], [chunk, qkv width], [chunk, n_heads*hd], [chunk, 2 hidden]
	aux            *webgpu.Buffer // [chunk, len(AuxLayers) * dim] or nil
	post           *webgpu.Buffer // [chunk, dim]: Gemma's attention and MLP outputs before their norms, or nil
	tokens         *webgpu.Buffer // [chunk] u32
	rows           *webgpu.Buffer // [chunk] RowInfo: each row's sequence and position
	blocks         *webgpu.Buffer // [chunk] AttnBlock: attention's blocks of rows
	seqs           *webgpu.Buffer // [max_seqs] SeqInfo
	pageTable      *webgpu.Buffer // [max_seqs, max pages per sequence] u32
	rowsel         *webgpu.Buffer // [max_logit_rows] u32: the rows that sample
	logits         *webgpu.Buffer // [max_logit_rows, vocab]
	res            *webgpu.Buffer // [max_logit_rows] RowResult
	drafts         *webgpu.Buffer // [max_logit_rows] u32 drafts, then [max_logit_rows, ceil(vocab/32)] token masks
	q              *webgpu.Buffer // [max_logit_rows, vocab] f32: the drafts' q rows, where given
	out            *webgpu.Buffer // [max_seqs, max_draft + 2] u32: count, tokens
	staging        *webgpu.Buffer // map-read copy of out
	adj            *webgpu.Buffer // [adjCap] Adj: the sequences' logit adjustments
	adjCap         int            // max_seqs * (min(max_seq, vocab) + 512)
	lp             *webgpu.Buffer // [max_logit_rows, LogprobStride] u32: logprobs
	lpStaging      *webgpu.Buffer // map-read copy of lp
	dummy          *webgpu.Buffer // stands in for bindings a variant does not read (64 bytes)
	feat           *webgpu.Buffer // [FeatureSlots, chunk, FeatureWidth]: the feature slots
	slots          []slotState    // what each slot holds

	// decode: one row. verify[i]: up to verifyRows[i] rows (drafts to verify, several
	// sequences' tokens, a short prompt), the matmuls in one block; recorded at first use.
	// prefill: many rows, in blocks of 8.
	decode, prefill *runtime.Program
	verify          [len(verifyRows)]*runtime.Program
	ran             map[*runtime.Program]bool // programs that have run (Opts.FirstRun)
	chainSt         *chainState               // DecodeChain's, from its first use
}

// New uploads host weights (see Load).
func New(d *runtime.Device, w *weights.LlamaWeights, opts Options) (*Model, error) {
	return Load(d, w.Cfg, w, opts)
}

// Load streams a model of configuration cfg from src to the device (a bounded chunk at a
// time: see load.go) and records the decode and prefill programs. On error what was
// allocated is released.
func Load(d *runtime.Device, cfg weights.Config, src weights.TensorSource, opts Options) (*Model, error) {
	opts.defaults(&cfg)
	if opts.KVType == wgsl.F16 && !d.HasF16 {
		return nil, fmt.Errorf("%w: an f16 KV cache needs the adapter's shader-f16", batch.ErrBadInput)
	}
	m := &Model{d: d, Cfg: cfg, Opts: opts, pool: kv.NewPagePool(opts.Pages, opts.PageSize),
		ran: map[*runtime.Program]bool{}}
	if err := m.build(src); err != nil {
		m.Release()
		return nil, err
	}
	return m, nil
}

func (m *Model) build(src weights.TensorSource) error {
	if err := m.upload(src); err != nil {
		return err
	}
	if err := m.allocate(); err != nil {
		return err
	}
	if err := m.allocateSlots(); err != nil {
		return err
	}
	var err error
	if m.decode, err = m.record(1, 1); err != nil {
		return err
	}
	m.prefill, err = m.record(prefillBlock, prefillBlock)
	return err
}

func (m *Model) allocate() error {
	c, o := m.Cfg, m.Opts
	// A sequence lists each token of its prompt and output once, and those it biases.
	m.adjCap = o.MaxSeqs * (min(c.MaxSeq, c.Vocab) + 512)
	chunk := o.PrefillChunk
	qkvW := (c.NHeads + 2*c.NKVHeads) * c.HeadDim
	maxPages := (c.MaxSeq + o.PageSize - 1) / o.PageSize
	qSize := 4 // bound, never read: the sampler reads q only for a sequence that has it
	if o.DraftQ {
		qSize = o.MaxLogitRows * c.Vocab
	}
	sizes := []struct {
		b *(*webgpu.Buffer)
		n int
		s string
	}{
		{&m.x, chunk * c.Dim, "x"}, {&m.qkv, chunk * qkvW, "qkv"}, {&m.att, chunk * c.NHeads * c.HeadDim, "att"},
		{&m.h, chunk * 2 * c.HiddenDim, "h"}, {&m.tokens, chunk, "tokens"}, {&m.rows, 2 * chunk, "rows"},
		{&m.blocks, 2 * chunk, "blocks"}, {&m.seqs, int(unsafe.Sizeof(runtime.SeqInfo{})) / 4 * o.MaxSeqs, "seqs"}, {&m.pageTable, o.MaxSeqs * maxPages, "page_table"},
		{&m.rowsel, o.MaxLogitRows, "rowsel"}, {&m.logits, o.MaxLogitRows * c.Vocab, "logits"},
		{&m.res, 4 * o.MaxLogitRows, "sample_rows"}, {&m.drafts, maskBase(o) + o.MaxLogitRows*batch.MaskWords(c.Vocab), "drafts"},
		{&m.q, qSize, "q"}, {&m.out, o.MaxSeqs * (o.MaxDraft + 2), "out"}, {&m.dummy, 64, "dummy"},
		{&m.adj, 4 * m.adjCap, "logit_adjustments"}, {&m.lp, o.MaxLogitRows * runtime.LogprobStride, "logprobs"},
	}
	for _, s := range sizes {
		b, err := m.d.NewStorage(s.s, uint64(4*s.n))
		if err != nil {
			return err
		}
		*s.b = b
	}
	if c.PostNorms {
		b, err := m.d.NewStorage("post", uint64(4*chunk*c.Dim))
		if err != nil {
			return err
		}
		m.post = b
	}
	if n := len(o.AuxLayers); n > 0 {
		for _, l := range o.AuxLayers {
			if l < 0 || l >= c.NLayers {
				return fmt.Errorf("%w: aux layer %d of a %d-layer model", batch.ErrBadInput, l, c.NLayers)
			}
		}
		b, err := m.d.NewStorage("aux", uint64(4*chunk*n*c.Dim))
		if err != nil {
			return err
		}
		m.aux = b
	}
	var err error
	if m.staging, err = m.d.CreateBuffer("out staging", m.out.Size, webgpu.UsageMapRead|webgpu.UsageCopyDst); err != nil {
		return err
	}
	m.lpStaging, err = m.d.CreateBuffer("logprobs staging", m.lp.Size, webgpu.UsageMapRead|webgpu.UsageCopyDst)
	return err
}

func concat(parts ...[]float32) []float32 {
	var out []float32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Pool is the model's KV page pool.
func (m *Model) Pool() *kv.PagePool { return m.pool }

// Limits are what one step of the model takes (the scheduler's Target).
func (m *Model) Limits() batch.Limits {
	o, c := m.Opts, m.Cfg
	return batch.Limits{MaxSeq: c.MaxSeq, Vocab: c.Vocab, MaxSeqs: o.MaxSeqs, MaxLogitRows: o.MaxLogitRows,
		MaxDraft: o.MaxDraft, StepRows: o.PrefillChunk, BlockRows: append([]int{1}, verifyRows[:]...), ChunkRows: prefillBlock,
		NoDraftQ: !o.DraftQ}
}
