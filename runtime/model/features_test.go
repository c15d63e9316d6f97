package model

import (
	"testing"

	"github.com/wspec/wspec/runtime/ref"
)

// TestFeaturesMatchReference: Hidden() is the residual stream after the last layer and Aux()
// the stream entering each AuxLayers layer, row by row, as the reference forward computes them.
func TestFeaturesMatchReference(t *testing.T) {
	d := testDevice(t)
	cfg := testConfigs[1] // 3 layers, GQA, biases
	w := ref.RandomLlama(cfg, 7)
	aux := []int{2, 1, 0}
	m, err := New(d, w, Options{PageSize: 8, AuxLayers: aux})
	if err != nil {
		t.Fatal(err)
	}
	st := ref.NewLlamaState(w)
	sess := m.NewSession()
	for _, toks := range [][]int{{3, 1, 4, 1, 5, 9, 2, 6}, {5}, {3, 5, 8}} {
		if _, err := sess.Forward(toks, 0, nil, Sampling{}); err != nil {
			t.Fatal(err)
		}
		_, hidden := st.Forward(toks)
		row0, pos0, rows := sess.LastRows()
		if row0 != 0 || rows != len(toks) || pos0 != sess.Len()-len(toks) {
			t.Fatalf("LastRows = (%d, %d, %d), want (0, %d, %d)", row0, pos0, rows, sess.Len()-len(toks), len(toks))
		}
		dim := cfg.Dim
		got, err := d.ReadF32(m.Hidden(), rows*dim)
		if err != nil {
			t.Fatal(err)
		}
		if e, at := maxRelErr(got, hidden[cfg.NLayers-1]); e > 2e-4 {
			t.Fatalf("hidden off by %.2g at %d", e, at)
		}
		gotAux, err := d.ReadF32(m.Aux(), rows*len(aux)*dim)
		if err != nil {
			t.Fatal(err)
		}
		emb := ref.Embed(w.Embed, toks, dim)
		for j, l := range aux {
			want := emb
			if l > 0 {
				want = hidden[l-1]
			}
			part := make([]float32, rows*dim)
			for r := 0; r < rows; r++ {
				copy(part[r*dim:(r+1)*dim], gotAux[(r*len(aux)+j)*dim:])
			}
			if e, at := maxRelErr(part, want); e > 2e-4 {
				t.Fatalf("aux of layer %d off by %.2g at %d", l, e, at)
			}
		}
	}
}
