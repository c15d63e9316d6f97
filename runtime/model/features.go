package model

import (
	"fmt"
	"slices"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// Feature slots are the named outputs drafters read (batch.Slot): a step copies the feature
// rows of each sequence whose SeqStep.Keep names a slot into that slot, in the step's own
// submit, and records which positions they are. The feature is what the model's drafters
// read: the residual streams entering Opts.AuxLayers side by side (EAGLE-3), or without aux
// layers the residual stream after the last layer, before the final norm (EAGLE-1, Medusa).
// Only a later step of the same sequence overwrites a slot, so any device work between a step
// and the drafting (another program, a benchmark) leaves the drafter's inputs alone.
//
// A step's rows go after the rows the slot holds before the step's first position (those are
// of accepted tokens: a step starts at its sequence's first unverified position) while they
// fit in a prefill chunk, and start the slot afresh when they do not. So a head with a KV
// cache (EAGLE) catches up on the steps it drafted nothing for, instead of restarting its
// cache without their context.

// slotState is what a slot holds: the features of positions pos0 .. pos0+n.
type slotState struct {
	used    bool
	pos0, n int
}

// keep is where a step's span of a sequence goes in the slot (its first row) and what the
// slot then holds: after the rows before the span's first position, if they and the span
// fit in rows, else from row 0.
func (st slotState) keep(sp rowSpan, rows int) (row int, next slotState) {
	if at := sp.pos0 - st.pos0; st.n > 0 && at >= 0 && at <= st.n && at+sp.n <= rows {
		return at, slotState{used: st.used, pos0: st.pos0, n: at + sp.n}
	}
	return 0, slotState{used: st.used, pos0: sp.pos0, n: sp.n}
}

// allocateSlots makes the slots' buffer: [FeatureSlots, PrefillChunk, FeatureWidth].
func (m *Model) allocateSlots() error {
	o := m.Opts
	if o.FeatureSlots <= 0 {
		return nil
	}
	b, err := m.d.NewStorage("feature_slots", uint64(4*o.FeatureSlots*o.PrefillChunk*m.FeatureWidth()))
	if err != nil {
		return err
	}
	m.feat, m.slots = b, make([]slotState, o.FeatureSlots)
	return nil
}

// FeatureWidth is the floats of one position's features.
func (m *Model) FeatureWidth() int {
	if n := len(m.Opts.AuxLayers); n > 0 {
		return n * m.Cfg.Dim
	}
	return m.Cfg.Dim
}

// NewSlot takes a free feature slot (for a new drafting sequence).
func (m *Model) NewSlot() (batch.Slot, error) {
	for i := range m.slots {
		if !m.slots[i].used {
			m.slots[i] = slotState{used: true}
			return batch.Slot(i + 1), nil
		}
	}
	return 0, fmt.Errorf("%w: all %d feature slots in use (Options.FeatureSlots)", batch.ErrBadInput, len(m.slots))
}

// ReleaseSlot frees a slot; releasing 0 or twice is harmless.
func (m *Model) ReleaseSlot(s batch.Slot) {
	if s > 0 && int(s) <= len(m.slots) {
		m.slots[s-1] = slotState{}
	}
}

// SlotRows says which positions slot s holds: pos0 .. pos0+n (n is 0 before its sequence's
// first step).
func (m *Model) SlotRows(s batch.Slot) (pos0, n int) {
	st := m.slots[s-1]
	return st.pos0, st.n
}

// SlotBuffer is the slots' buffer and the byte offset of position pos in slot s, which must
// be one of its rows.
func (m *Model) SlotBuffer(s batch.Slot, pos int) (*webgpu.Buffer, uint64) {
	st := m.slots[s-1]
	if pos < st.pos0 || pos >= st.pos0+st.n {
		panic(fmt.Sprintf("model: position %d is not in feature slot %d (positions %d..%d)", pos, s, st.pos0, st.pos0+st.n))
	}
	row := (int(s)-1)*m.Opts.PrefillChunk + pos - st.pos0
	return m.feat, uint64(4 * row * m.FeatureWidth())
}

// encodeKeep copies the step's rows of each sequence that keeps features into its slot.
func (m *Model) encodeKeep(enc *webgpu.Encoder, steps []batch.SeqStep, spans []rowSpan) {
	src := m.x
	if m.aux != nil {
		src = m.aux
	}
	w := uint64(4 * m.FeatureWidth())
	for i, st := range steps {
		if st.Keep == 0 {
			continue
		}
		sp := spans[i]
		row, _ := m.slots[st.Keep-1].keep(sp, m.Opts.PrefillChunk)
		dst := uint64((int(st.Keep)-1)*m.Opts.PrefillChunk+row) * w
		enc.Copy(src, uint64(sp.row0)*w, m.feat, dst, uint64(sp.n)*w)
	}
}

// commitKeep records what the step wrote into the slots.
func (m *Model) commitKeep(steps []batch.SeqStep, spans []rowSpan) {
	for i, st := range steps {
		if st.Keep != 0 {
			_, m.slots[st.Keep-1] = m.slots[st.Keep-1].keep(spans[i], m.Opts.PrefillChunk)
		}
	}
}

// Device is the model's device.
func (m *Model) Device() *runtime.Device { return m.d }

// FinalNorm is the final RMSNorm weight [dim] (f32).
func (m *Model) FinalNorm() *webgpu.Buffer { return m.norm }

// WeightTypes lists the weight types the model's matrices hold on the device (its float type,
// and the quantized types a GGUF file's matrices kept), in the order first met.
func (m *Model) WeightTypes() []wgsl.WeightType {
	var out []wgsl.WeightType
	add := func(l *runtime.Linear) {
		for _, t := range l.Types() {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	add(m.embed)
	add(m.lmHead)
	for _, l := range m.layers {
		for _, lin := range []*runtime.Linear{l.qkv, l.wo, l.w13, l.w2} {
			add(lin)
		}
	}
	return out
}

// Embedding is the token embedding [vocab, dim].
func (m *Model) Embedding() *runtime.Linear { return m.embed }

// LMHead is the output projection [vocab, dim] (the embedding when tied).
func (m *Model) LMHead() *runtime.Linear { return m.lmHead }

// Dummy is a small buffer for bindings a kernel variant does not read.
func (m *Model) Dummy() *webgpu.Buffer { return m.dummy }
