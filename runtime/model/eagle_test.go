package model

import (
	"errors"
	"math/rand"
	"slices"
	"testing"

	wruntime "github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

var eagleTarget = weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 4, NHeads: 4, NKVHeads: 2, HeadDim: 16,
	Vocab: 300, MaxSeq: 96, RopeTheta: 10000, RMSEps: 1e-5}

// writeEagleHead writes a random head to a temporary folder in the published layout and
// loads it back (so the loader's reading is what the device and the reference use).
func writeEagleHead(t *testing.T, kind string, c weights.Config, vd int, seed int64, o weights.EagleWriteOptions) *weights.Eagle {
	t.Helper()
	dir := t.TempDir()
	if err := weights.WriteEagle(dir, ref.RandomEagle(kind, c, eagleTarget, vd, seed), o); err != nil {
		t.Fatal(err)
	}
	w, err := weights.LoadEagle(dir, kind, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestEagleMatchesReference: the drafts the device head proposes after a prefill (tiled
// catch-up, or only the last chunk's features) and after verify steps that keep all, some or
// none of their rows equal the pure-Go head's greedy drafts on the same target features.
func TestEagleMatchesReference(t *testing.T) {
	d := testDevice(t)
	head := func(dim, hidden, nh, nkv, hd int, theta float64) weights.Config {
		return weights.Config{Arch: "llama", Dim: dim, HiddenDim: hidden, NHeads: nh, NKVHeads: nkv, HeadDim: hd,
			MaxSeq: 96, RopeTheta: theta, RMSEps: 1e-5, BOS: -1}
	}
	cases := []struct {
		name, kind string
		head       weights.Config
		vd, prompt int
		o          weights.EagleWriteOptions
		auxIDs     []int // nil: the default layers ([2, 2, 1] here: one named twice)
	}{
		{"eagle", weights.EagleKind1, head(64, 128, 4, 2, 16, 10000), 0, 20, weights.EagleWriteOptions{}, nil},
		{"eagle-chunked-prefixed-f16", weights.EagleKind1, head(64, 96, 8, 8, 8, 500000), 0, 45, weights.EagleWriteOptions{Prefix: true, DType: weights.F16}, nil},
		// Layer 0's input (the embedding, copied) and two fused into the w2 before them, unordered.
		{"eagle3-d2t-own-embedding", weights.EagleKind3, head(48, 96, 4, 4, 12, 10000), 200, 20, weights.EagleWriteOptions{Prefix: true}, []int{3, 0, 1}},
		{"eagle3-full-vocab", weights.EagleKind3, head(64, 128, 4, 1, 16, 10000), 0, 12, weights.EagleWriteOptions{DType: weights.BF16}, nil},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tw := ref.RandomLlama(eagleTarget, int64(40+ci))
			w := writeEagleHead(t, tc.kind, tc.head, tc.vd, int64(50+ci), tc.o)
			w.AuxLayerIDs = tc.auxIDs
			var aux []int
			if tc.kind == weights.EagleKind3 {
				var err error
				if aux, err = w.AuxLayers(eagleTarget.NLayers); err != nil {
					t.Fatal(err)
				}
			}
			m, err := New(d, tw, Options{PageSize: 8, PrefillChunk: 32, AuxLayers: aux, FeatureSlots: 2})
			if err != nil {
				t.Fatal(err)
			}
			h, err := NewEagle(m, w)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release()
			checkEagleRounds(t, m, h, tw, w, aux, tc.prompt, int64(ci))
		})
	}
}

// checkEagleRounds runs rounds of target steps and drafts. Odd rounds put device work between
// the step and the drafting (another sequence's step, which reuses every activation buffer);
// the drafts must not change. Two rounds in a row draft nothing (an adaptive plan's steps
// without drafts): the next draft catches the head up on both steps' features and its cache
// keeps its start.
func checkEagleRounds(t *testing.T, m *Model, head *Eagle, tw *weights.LlamaWeights, w *weights.Eagle, aux []int, promptLen int, seed int64) {
	sess, other := m.NewSession(), m.NewSession()
	defer sess.Release()
	defer other.Release()
	slot, err := m.NewSlot()
	if err != nil {
		t.Fatal(err)
	}
	defer m.ReleaseSlot(slot)
	sess.Keep = slot
	seq := sess.seq
	h, err := head.NewSeq(slot)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	draft := func(ctx []int, k int) ([]int, error) {
		r := []EagleDraft{{Seq: h, Ctx: ctx, K: k}}
		err := head.Draft(r)
		return r[0].Out, err
	}
	rng := rand.New(rand.NewSource(seed))
	featW := eagleTarget.Dim * max(1, len(aux))
	st := ref.NewLlamaState(tw)
	rs := ref.NewEagleState(w, tw)
	ctx := make([]int, promptLen)
	for i := range ctx {
		ctx[i] = rng.Intn(eagleTarget.Vocab)
	}
	// The reference head starts where the device's features start: the last prefill chunk.
	refBase := (promptLen - 1) / 32 * 32
	from := refBase              // the reference head's next catch-up position
	byPos := map[int][]float32{} // the kept features by position
	fed := ctx
	for round := 0; round < 8; round++ {
		lenBefore := seq.Len()
		out, err := sess.Forward(fed, 0, nil, batch.Sampling{})
		if err != nil {
			t.Fatal(err)
		}
		_, hidden := st.Forward(fed)
		feats := ref.EagleFeatures(tw, fed, hidden, aux)
		// Keep `keep` of the fed rows (a verify step that accepted keep-1 drafts).
		keep := len(fed)
		if round > 0 {
			keep = 1 + rng.Intn(len(fed))
			seq.Truncate(lenBefore + keep)
			st.Truncate(lenBefore + keep)
		}
		if round > 0 {
			ctx = append(ctx, fed[1:keep]...)
		}
		for r := range keep {
			byPos[lenBefore+r] = feats[r*featW : (r+1)*featW]
		}
		ctx = append(ctx, out[0])
		if round == 3 || round == 4 { // no drafts: the next step feeds the new token alone
			fed = ctx[len(ctx)-1:]
			continue
		}
		if round%2 == 1 {
			other.Truncate(0)
			if _, err := other.Forward(ctx[:min(len(ctx), 30)], 0, nil, batch.Sampling{}); err != nil {
				t.Fatal(err)
			}
		}
		k := 1 + rng.Intn(8)
		got, err := draft(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		// Reference catch-up rows: positions from .. len(ctx)-2 (every step since the last draft).
		rows := len(ctx) - 1 - from
		var f []float32
		for p := from; p < len(ctx)-1; p++ {
			f = append(f, byPos[p]...)
		}
		want := rs.Draft(ctx[from+1:], f, featW, k)
		from = len(ctx) - 1
		if !slices.Equal(got, want) {
			t.Fatalf("round %d (k %d, %d catch-up rows): device drafts %v, reference %v", round, k, rows, got, want)
		}
		if again, _ := draft(ctx, k); !slices.Equal(again, got) {
			t.Fatalf("round %d: a second Draft gave %v, then %v", round, got, again)
		}
		if n, base := h.CacheLen(); base+n != len(ctx)-1+k-1 || base != refBase {
			t.Fatalf("round %d: head cache of %d rows from %d, context %d, k %d", round, n, base, len(ctx), k)
		}
		fed = append([]int{ctx[len(ctx)-1]}, got...)
	}
}

// TestEagleTargetMismatch: a head that does not fit its target is refused with a clear error.
func TestEagleTargetMismatch(t *testing.T) {
	d := testDevice(t)
	tw := ref.RandomLlama(eagleTarget, 3)
	m, err := New(d, tw, Options{PageSize: 8, PrefillChunk: 32, FeatureSlots: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NHeads: 4, NKVHeads: 4, HeadDim: 16, RopeTheta: 10000, RMSEps: 1e-5, MaxSeq: 96}
	w3 := ref.RandomEagle(weights.EagleKind3, c, eagleTarget, 0, 1)
	if _, err := NewEagle(m, w3); !errors.Is(err, ErrEagle) {
		t.Errorf("EAGLE-3 head on a target without aux layers: %v", err)
	}
	c.Dim, c.HeadDim = 32, 8
	w1 := ref.RandomEagle(weights.EagleKind1, c, eagleTarget, 0, 1)
	if _, err := NewEagle(m, w1); !errors.Is(err, weights.ErrBadEagle) {
		t.Errorf("EAGLE-1 head of another width: %v", err)
	}
}

// TestEagleDraftsSequencesInOneSubmit: drafting for several sequences in one call takes one
// submit and gives each sequence the drafts it gets alone.
func TestEagleDraftsSequencesInOneSubmit(t *testing.T) {
	d := testDevice(t)
	tw := ref.RandomLlama(eagleTarget, 41)
	c := weights.Config{Arch: "llama", Dim: 48, HiddenDim: 96, NHeads: 4, NKVHeads: 4, HeadDim: 12, MaxSeq: 96,
		RopeTheta: 10000, RMSEps: 1e-5, BOS: -1}
	w := writeEagleHead(t, weights.EagleKind3, c, 200, 7, weights.EagleWriteOptions{})
	aux, err := w.AuxLayers(eagleTarget.NLayers)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(d, tw, Options{PageSize: 8, PrefillChunk: 32, AuxLayers: aux, FeatureSlots: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	head, err := NewEagle(m, w)
	if err != nil {
		t.Fatal(err)
	}
	defer head.Release()
	// run prefills n sequences (each keeping its features), then drafts for all of them at
	// once or one at a time; it returns the drafts and the submits the drafting took.
	run := func(together bool) ([][]int, uint64) {
		var reqs []EagleDraft
		for i := range 3 {
			sess := m.NewSession()
			defer sess.Release()
			slot, err := m.NewSlot()
			if err != nil {
				t.Fatal(err)
			}
			defer m.ReleaseSlot(slot)
			sess.Keep = slot
			ctx := []int{1 + i, 20 + i, 30, 40 + 2*i, 50, 60 + i, 70}[:4+i]
			out, err := sess.Forward(ctx, 0, nil, batch.Sampling{})
			if err != nil {
				t.Fatal(err)
			}
			hs, err := head.NewSeq(slot)
			if err != nil {
				t.Fatal(err)
			}
			defer hs.Release()
			reqs = append(reqs, EagleDraft{Seq: hs, Ctx: append(ctx, out[0]), K: 2 + 2*i})
		}
		submits := d.Submits()
		if together {
			if err := head.Draft(reqs); err != nil {
				t.Fatal(err)
			}
		} else {
			for i := range reqs {
				if err := head.Draft(reqs[i : i+1]); err != nil {
					t.Fatal(err)
				}
			}
		}
		var out [][]int
		for _, r := range reqs {
			out = append(out, r.Out)
		}
		return out, d.Submits() - submits
	}
	alone, _ := run(false)
	together, submits := run(true)
	if submits != 1 {
		t.Errorf("drafting for 3 sequences took %d submits", submits)
	}
	for i := range alone {
		if len(alone[i]) != 2+2*i || !slices.Equal(alone[i], together[i]) {
			t.Errorf("sequence %d: drafts %v alone, %v together", i, alone[i], together[i])
		}
	}
}

// Releasing a head releases its programs, whose dispatches' uniform buffers and bind groups
// were left behind: each EAGLE or EAGLE-3 engine loaded and closed grew the process by about
// 3 MB (12 cycles of the shipped EAGLE-3 head on stories15M; about 0.5 MB a cycle since, as
// ngram's).
func TestEagleReleaseReleasesPrograms(t *testing.T) {
	d := testDevice(t)
	c := weights.Config{Arch: "llama", Dim: 64, HiddenDim: 128, NHeads: 4, NKVHeads: 2, HeadDim: 16, MaxSeq: 96,
		RopeTheta: 10000, RMSEps: 1e-5, BOS: -1}
	w := writeEagleHead(t, weights.EagleKind3, c, 0, 7, weights.EagleWriteOptions{})
	aux, err := w.AuxLayers(eagleTarget.NLayers)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(d, ref.RandomLlama(eagleTarget, 3), Options{PageSize: 8, PrefillChunk: 32, AuxLayers: aux, FeatureSlots: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	h, err := NewEagle(m, w)
	if err != nil {
		t.Fatal(err)
	}
	progs := append([]*wruntime.Program{h.catchM, h.catchT}, h.depths...)
	h.Release()
	for i, p := range progs {
		if p.Len() != 0 {
			t.Errorf("program %d of %d still holds %d dispatches after the head's Release", i, len(progs), p.Len())
		}
	}
}
