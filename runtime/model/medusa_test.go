package model

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// checkArgmax fails unless got is an argmax of logits up to rounding: its logit is within a
// small tolerance of the maximum (the device and the reference round differently).
func checkArgmax(t *testing.T, what string, got int, logits []float32) {
	t.Helper()
	best := kernelref.Argmax(logits)
	if got == best {
		return
	}
	if got < 0 || got >= len(logits) || logits[best]-logits[got] > 1e-4*max(1, abs32(logits[best])) {
		t.Fatalf("%s: device drafted %d, reference argmax %d (logits %g vs %g)", what, got, best, logits[got], logits[best])
	}
}

func abs32(x float32) float32 { return max(x, -x) }

// TestMedusaMatchesReference: heads written in the published layouts (v1 with output layers,
// v2 on the target's LM head, vLLM's) and read back draft, on every row of a target step, the
// reference heads' argmaxes; in one submit of K heads.
func TestMedusaMatchesReference(t *testing.T) {
	d := testDevice(t)
	cases := []struct {
		cfg     int
		K, R    int
		layout  string
		storeAs weights.DType
	}{
		{0, 1, 1, weights.MedusaV1, weights.F32},
		{0, 3, 2, weights.MedusaV2, weights.F32},
		{1, 5, 1, weights.MedusaV1, weights.BF16},
		{1, 2, 3, weights.MedusaV2, weights.F32},
		{0, 4, 2, weights.MedusaVLLM, weights.F32},
	}
	models := map[int]*Model{}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s-K%d-R%d", c.layout, c.K, c.R), func(t *testing.T) {
			cfg := testConfigs[c.cfg]
			w := ref.RandomLlama(cfg, int64(c.cfg+1))
			if models[c.cfg] == nil {
				m, err := New(d, w, Options{PageSize: 8, FeatureSlots: 1})
				if err != nil {
					t.Fatal(err)
				}
				models[c.cfg] = m
			}
			m := models[c.cfg]
			vocab := cfg.Vocab
			if c.layout == weights.MedusaV2 {
				vocab = 0
			}
			dir := t.TempDir()
			if err := weights.WriteMedusa(dir, ref.RandomMedusa(c.K, c.R, cfg.Dim, vocab, int64(i)), c.layout, c.storeAs); err != nil {
				t.Fatal(err)
			}
			hw, err := weights.LoadMedusa(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			md, err := NewMedusa(m, hw)
			if err != nil {
				t.Fatal(err)
			}
			defer md.Release()
			st := ref.NewLlamaState(w)
			sess := m.NewSession()
			defer sess.Release()
			slot, err := m.NewSlot()
			if err != nil {
				t.Fatal(err)
			}
			defer m.ReleaseSlot(slot)
			sess.Keep = slot
			for _, toks := range [][]int{{3, 1, 4, 1, 5, 9, 2}, {6}, {5, 3, 5}} {
				if _, err := sess.Forward(toks, 0, nil, batch.Sampling{}); err != nil {
					t.Fatal(err)
				}
				_, hidden := st.Forward(toks)
				last := hidden[cfg.NLayers-1]
				// The step's rows (the slot holds the earlier steps' too): every row at once, as
				// several sequences' drafts, in one submit.
				pos0, rows := sess.Len()-len(toks), len(toks)
				var reqs []MedusaDraft
				for r := range rows {
					reqs = append(reqs, MedusaDraft{Slot: slot, Pos: pos0 + r, N: c.K - r%c.K}) // all heads, then fewer
				}
				submits := d.Submits()
				if err := md.Draft(reqs); err != nil {
					t.Fatal(err)
				}
				if n := d.Submits() - submits; n != 1 {
					t.Fatalf("drafting for %d rows took %d submits", rows, n)
				}
				for r := range rows {
					n, got := reqs[r].N, reqs[r].Out
					logits, _, err := ref.MedusaForward(hw, last[r*cfg.Dim:(r+1)*cfg.Dim], w.Norm, cfg.RMSEps, w.LMHead)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != n {
						t.Fatalf("%d drafts asked of %d heads, got %d", n, c.K, len(got))
					}
					for k := range got {
						checkArgmax(t, fmt.Sprintf("position %d head %d", pos0+r, k), got[k], logits[k])
					}
				}
				if err := md.Draft([]MedusaDraft{{Slot: slot, Pos: pos0 + rows, N: c.K}}); !errors.Is(err, batch.ErrBadInput) {
					t.Fatalf("a position past the last step: %v", err)
				}
			}
		})
	}
	m := models[0]
	for name, hw := range map[string]*weights.Medusa{
		"dim":   ref.RandomMedusa(2, 1, testConfigs[0].Dim/2, 0, 1),
		"vocab": ref.RandomMedusa(2, 1, testConfigs[0].Dim, testConfigs[0].Vocab+1, 1),
	} {
		if _, err := NewMedusa(m, hw); !errors.Is(err, batch.ErrBadInput) {
			t.Errorf("Medusa of another %s: %v", name, err)
		}
	}
}
