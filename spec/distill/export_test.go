package distill

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// writeTarget writes a target's weights as a model folder (F32).
func writeTarget(t *testing.T, w *weights.LlamaWeights) string {
	t.Helper()
	dir := t.TempDir()
	if err := SaveLlama(dir, w, weights.TargetID{Name: "self", Fingerprint: "x"}, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

func closeF16(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-3*math.Abs(float64(want[i]))+1e-6 {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// Every drafter written by Save* loads with the repository's loaders, in float16 from
// zstd files, knows its target, and is refused by another target.
func TestSaveLoadDrafters(t *testing.T) {
	w, d := tinyTarget(t, []int{0, 1, 2})
	tdir := writeTarget(t, w)
	tw, err := weights.LoadLlama(tdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := weights.TargetIDOfWeights("tiny", tw)
	other := ref.RandomLlama(w.Cfg, 99)
	odir := writeTarget(t, other)
	out := t.TempDir()

	e3, err := NewEagle3(tw, d, Eagle3Options{DraftVocab: 20, TTT: 2, WarmStart: true})
	if err != nil {
		t.Fatal(err)
	}
	e1, err := NewEagle1(tw, d, Eagle1Options{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := NewMedusa(tw, d, MedusaOptions{Heads: 4})
	if err != nil {
		t.Fatal(err)
	}
	roughen(newRng(1), 0.1, md.Params()...)
	dm, err := NewDraftModel(tw, d, DraftOptions{Layers: 2, Dim: 8, Hidden: 12, Heads: 2})
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, kind := range []string{"eagle3", "eagle", "medusa", "draft_model"} {
		dirs[kind] = filepath.Join(out, kind)
	}
	if err := SaveEagle(dirs["eagle3"], e3.Export(), id, false); err != nil {
		t.Fatal(err)
	}
	if err := SaveEagle(dirs["eagle"], e1.Export(), id, false); err != nil {
		t.Fatal(err)
	}
	if err := SaveMedusa(dirs["medusa"], md.Export(), id, false); err != nil {
		t.Fatal(err)
	}
	if err := SaveLlama(dirs["draft_model"], dm.Export(), id, false); err != nil {
		t.Fatal(err)
	}

	g3, err := weights.LoadEagle(dirs["eagle3"], weights.EagleKind3, nil)
	if err != nil {
		t.Fatal(err)
	}
	want3 := e3.Export()
	closeF16(t, "eagle3 fc", g3.FC, want3.FC)
	closeF16(t, "eagle3 wk", g3.Wk, want3.Wk)
	closeF16(t, "eagle3 lm_head", g3.LMHead, want3.LMHead)
	if aux, err := g3.AuxLayers(tw.Cfg.NLayers); err != nil || len(aux) != 3 || aux[0] != 0 || aux[2] != 2 {
		t.Fatalf("eagle3 aux layers %v, %v; want the dataset's [0 1 2]", aux, err)
	}
	for i, v := range g3.D2T {
		if int64(i)+v != int64(e3.used[i]) {
			t.Fatalf("d2t[%d] maps to %d, want %d", i, int64(i)+v, e3.used[i])
		}
	}
	g1, err := weights.LoadEagle(dirs["eagle"], weights.EagleKind1, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeF16(t, "eagle fc.bias", g1.FCBias, e1.Export().FCBias)
	closeF16(t, "eagle down", g1.WDown, e1.Export().WDown)
	gm, err := weights.LoadMedusa(dirs["medusa"], nil)
	if err != nil {
		t.Fatal(err)
	}
	if gm.Heads() != 4 || gm.Layout != weights.MedusaV2 {
		t.Fatalf("medusa: %d heads, layout %s", gm.Heads(), gm.Layout)
	}
	closeF16(t, "medusa 3.0.linear.weight", gm.Blocks[3][0].W, md.W[3].W)
	gd, err := weights.LoadLlama(dirs["draft_model"], nil)
	if err != nil {
		t.Fatal(err)
	}
	if gd.Cfg.Vocab != tw.Cfg.Vocab || !gd.Cfg.TieEmbed || gd.Cfg.Dim != 8 {
		t.Fatalf("draft model config %+v", gd.Cfg)
	}
	closeF16(t, "draft embed", gd.Embed, dm.Embed.W)

	for kind, dir := range dirs {
		if err := weights.CheckTargetDir(dir, tdir); err != nil {
			t.Errorf("%s against its target: %v", kind, err)
		}
		if err := weights.CheckTargetDir(dir, odir); !errors.Is(err, weights.ErrWrongTarget) {
			t.Errorf("%s against another target: %v, want ErrWrongTarget", kind, err)
		}
	}
}
