package distill

import (
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// EagleHead against ref.EagleState, both kinds: a catch-up of several rows, then drafts.
func TestEagleHeadMatchesRef(t *testing.T) {
	tc := weights.Config{Arch: "llama", Dim: 32, HiddenDim: 48, NLayers: 4, NHeads: 4, NKVHeads: 4, HeadDim: 8,
		Vocab: 60, MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true}
	tw := ref.RandomLlama(tc, 3)
	tm, err := NewLlama(tw, 0)
	if err != nil {
		t.Fatal(err)
	}
	hc := tc
	hc.HiddenDim = 40
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		w := ref.RandomEagle(kind, hc, tc, 25, 4)
		h, err := NewEagleHead(w, tm)
		if err != nil {
			t.Fatal(err)
		}
		width := tc.Dim
		if kind == weights.EagleKind3 {
			width = 3 * tc.Dim
		}
		feats := randVec(newRng(8), 5*width)
		toks := []int{3, 17, 40, 8, 59}
		got, want := h.NewState(), ref.NewEagleState(w, tw)
		l1, o1 := got.Forward(toks[:3], feats[:3*width], width)
		l2, o2 := want.Forward(toks[:3], feats[:3*width], width)
		maxRelDiff(t, kind+" logits", l1, l2, 1e-4)
		maxRelDiff(t, kind+" out", o1, o2, 1e-4)
		d1 := got.Draft(toks[3:], feats[3*width:], width, 4)
		d2 := want.Draft(toks[3:], feats[3*width:], width, 4)
		if len(d1) != 4 || fmt4(d1) != fmt4(d2) || got.Len() != 5 {
			t.Fatalf("%s: drafts %v, ref %v (cache %d rows)", kind, d1, d2, got.Len())
		}
	}
}
