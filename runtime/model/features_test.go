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
// that keeps nothing, leaves the slot alone. The slot holds the sequence's earlier steps'
// rows before the new step's first position (a rejected draft's row is overwritten) while
// they fit in a prefill chunk, and starts afresh from a step that does not fit.
func TestFeatureSlots(t *testing.T) {
	d := testDevice(t)
	cfg := testConfigs[1] // 3 layers, GQA, biases
	w := ref.RandomLlama(cfg, 7)
	const chunk = 20
	for _, aux := range [][]int{nil, {2, 1, 0}} {
		m, err := New(d, w, Options{PageSize: 8, PrefillChunk: chunk, AuxLayers: aux, FeatureSlots: 2})
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
		var want [][]float32 // want[pos]: the features of position pos
		for _, c := range []struct {
			toks        []int
			drop        int // rows truncated before the step (rejected drafts)
			pos0, nRows int // what the slot then holds
		}{
			{[]int{3, 1, 4, 1, 5, 9, 2, 6}, 0, 0, 8},
			{[]int{5}, 0, 0, 9},
			{[]int{3, 5, 8}, 0, 0, 12},
			{[]int{4, 4}, 2, 0, 12},                      // positions 10 and 11 again
			{[]int{2, 7, 1, 8, 2, 8, 1, 8, 2}, 0, 12, 9}, // 12+9 rows do not fit in 20
		} {
			sess.Truncate(sess.Len() - c.drop)
			st.Truncate(st.Len() - c.drop)
			want = want[:len(want)-c.drop]
			if _, err := sess.Forward(c.toks, 0, nil, batch.Sampling{}); err != nil {
				t.Fatal(err)
			}
			// Device work between the step and the reading: another sequence's step.
			if _, err := other.Forward([]int{7, 7, 7, 7, 7}, 0, nil, batch.Sampling{}); err != nil {
				t.Fatal(err)
			}
			_, hidden := st.Forward(c.toks)
			emb := kernelref.Embed(w.Embed, c.toks, dim)
			for r := range c.toks {
				row := make([]float32, 0, width)
				if aux == nil {
					row = append(row, hidden[cfg.NLayers-1][r*dim:(r+1)*dim]...)
				}
				for _, l := range aux {
					src := emb
					if l > 0 {
						src = hidden[l-1]
					}
					row = append(row, src[r*dim:(r+1)*dim]...)
				}
				want = append(want, row)
			}
			pos0, rows := m.SlotRows(slot)
			if pos0 != c.pos0 || rows != c.nRows {
				t.Fatalf("after %v: slot holds positions %d+%d, want %d+%d", c.toks, pos0, rows, c.pos0, c.nRows)
			}
			buf, off := m.SlotBuffer(slot, pos0)
			all, err := d.ReadF32(buf, int(off/4)+rows*width)
			if err != nil {
				t.Fatal(err)
			}
			got := all[off/4:]
			for r := range rows {
				if e, at := maxRelErr(got[r*width:(r+1)*width], want[pos0+r]); e > 2e-4 {
					t.Fatalf("after %v, aux %v: position %d off by %.2g at %d", c.toks, aux, pos0+r, e, at)
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

// Where a step's rows go in a slot of 20 rows holding positions 10..15: after the rows before
// the step's first position while they fit, else from row 0.
func TestSlotKeep(t *testing.T) {
	held := slotState{used: true, pos0: 10, n: 6}
	for _, c := range []struct {
		sp       rowSpan
		row, pos int // where the span goes; the slot's first position after
		n        int
	}{
		{rowSpan{pos0: 16, n: 3}, 6, 10, 9},   // the next positions
		{rowSpan{pos0: 13, n: 2}, 3, 10, 5},   // rows 13.. were rejected drafts
		{rowSpan{pos0: 10, n: 20}, 0, 10, 20}, // the whole slot
		{rowSpan{pos0: 16, n: 15}, 0, 16, 15}, // does not fit: afresh
		{rowSpan{pos0: 17, n: 1}, 0, 17, 1},   // a position missing between: afresh
		{rowSpan{pos0: 4, n: 3}, 0, 4, 3},     // before the slot (a recomputation): afresh
	} {
		row, next := held.keep(c.sp, 20)
		if row != c.row || next != (slotState{used: true, pos0: c.pos, n: c.n}) {
			t.Errorf("%+v: row %d, slot %+v; want row %d, positions %d+%d", c.sp, row, next, c.row, c.pos, c.n)
		}
	}
	if row, next := (slotState{used: true}).keep(rowSpan{pos0: 0, n: 5}, 20); row != 0 || next.n != 5 {
		t.Errorf("an empty slot: row %d, %+v", row, next)
	}
}
