package model

import (
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
)

// TestFeatureSlots: a step keeps, in the sequence's slot, the residual stream after the last
// layer (no aux layers) or the stream entering each aux layer, row by row as the reference
// forward computes them, with the positions they are; another sequence's step, or a step
// that keeps nothing, leaves the slot alone.
func TestFeatureSlots(t *testing.T) {
	d := testDevice(t)
	cfg := testConfigs[1] // 3 layers, GQA, biases
	w := ref.RandomLlama(cfg, 7)
	for _, aux := range [][]int{nil, {2, 1, 0}} {
		m, err := New(d, w, Options{PageSize: 8, AuxLayers: aux, FeatureSlots: 2})
		if err != nil {
			t.Fatal(err)
		}
		slot, err := m.NewSlot()
		if err != nil {
			t.Fatal(err)
		}
		st := ref.NewLlamaState(w)
		sess, other := m.NewSession(), m.NewSession()
		sess.Keep = slot
		dim, width := cfg.Dim, m.FeatureWidth()
		for _, toks := range [][]int{{3, 1, 4, 1, 5, 9, 2, 6}, {5}, {3, 5, 8}} {
			if _, err := sess.Forward(toks, 0, nil, batch.Sampling{}); err != nil {
				t.Fatal(err)
			}
			// Device work between the step and the reading: another sequence's step.
			if _, err := other.Forward([]int{7, 7, 7, 7, 7}, 0, nil, batch.Sampling{}); err != nil {
				t.Fatal(err)
			}
			_, hidden := st.Forward(toks)
			pos0, rows := m.SlotRows(slot)
			if rows != len(toks) || pos0 != sess.Len()-len(toks) {
				t.Fatalf("slot holds positions %d+%d, want %d+%d", pos0, rows, sess.Len()-len(toks), len(toks))
			}
			buf, off := m.SlotBuffer(slot, pos0)
			all, err := d.ReadF32(buf, int(off/4)+rows*width)
			if err != nil {
				t.Fatal(err)
			}
			got := all[off/4:]
			if aux == nil {
				if e, at := maxRelErr(got, hidden[cfg.NLayers-1]); e > 2e-4 {
					t.Fatalf("hidden off by %.2g at %d", e, at)
				}
				continue
			}
			emb := kernelref.Embed(w.Embed, toks, dim)
			for j, l := range aux {
				want := emb
				if l > 0 {
					want = hidden[l-1]
				}
				part := make([]float32, rows*dim)
				for r := 0; r < rows; r++ {
					copy(part[r*dim:(r+1)*dim], got[(r*len(aux)+j)*dim:])
				}
				if e, at := maxRelErr(part, want); e > 2e-4 {
					t.Fatalf("aux of layer %d off by %.2g at %d", l, e, at)
				}
			}
		}
		if _, err := m.NewSlot(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.NewSlot(); err == nil {
			t.Fatal("a third slot of two was given")
		}
		m.ReleaseSlot(slot)
		if _, err := m.NewSlot(); err != nil {
			t.Fatalf("a released slot was not given again: %v", err)
		}
		sess.Release()
		other.Release()
		m.Release()
	}
}
