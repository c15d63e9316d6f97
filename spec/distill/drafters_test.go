package distill

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// The drafters the repository ships (spec/drafters/stories15M, made by recipe.sh).
const shippedDir = "../drafters/stories15M"

// shipped loads stories15M and the CPU target; both must be there (CI has them).
func shipped(t *testing.T, mode string) (*Target, string) {
	t.Helper()
	root := shippedDir
	if d := os.Getenv("WSPEC_TEST_DRAFTERS"); d != "" {
		root = d // another set of drafters in the same layout
	}
	dir := filepath.Join(root, mode)
	if _, err := os.Stat(filepath.Join(dir, weights.ConfigFileName)); err != nil {
		t.Fatalf("no shipped %s drafter (%v): run spec/distill/recipe.sh", mode, err)
	}
	if _, err := os.Stat(storiesDir); err != nil {
		t.Fatalf("stories15M not set up (%v): run ./setup.sh", err)
	}
	tg, err := LoadTarget(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	return tg, dir
}

// checkShipped checks what every shipped drafter must do: load with the repository's
// loaders, name stories15M as its target (and be refused by another), and, with greedy
// speculative decoding on the CPU, give exactly the target's greedy output.
func checkShipped(t *testing.T, tg *Target, mode, dir string) {
	t.Helper()
	if err := weights.CheckTargetDir(dir, storiesDir); err != nil {
		t.Fatalf("%s against stories15M: %v", mode, err)
	}
	id, err := weights.ReadTargetID(dir)
	if err != nil || id == nil || id.Fingerprint != tg.ID.Fingerprint {
		t.Fatalf("%s: wspec_target %+v, %v; want stories15M's %s", mode, id, err, tg.ID.Fingerprint)
	}
	other := ref.RandomLlama(tg.W.Cfg, 5)
	other.Cfg.MaxSeq = 64
	if err := weights.CheckTargetDir(dir, writeTarget(t, other)); !errors.Is(err, weights.ErrWrongTarget) {
		t.Fatalf("%s against another target: %v, want ErrWrongTarget", mode, err)
	}
	d, aux, err := LoadSimDrafter(mode, dir, tg)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Prompts("eval")
	if err != nil {
		t.Fatal(err)
	}
	prompts := tg.Encode(ps[:3])
	refs, err := Reference(tg.M, prompts, 40, aux)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 4, 8} {
		for i, p := range prompts {
			got, _ := replay(t, tg.M, func() SimDrafter { return d }, p, k, 40, aux)
			want := refs[i].Tokens[refs[i].Prompt:]
			if n := len(want); n > 0 && slices.Contains(tg.W.Cfg.EOS, want[n-1]) {
				want = want[:n-1]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s k=%d prompt %d: speculative output %v, greedy %v", mode, k, i, got, want)
			}
		}
	}
}

// The shipped EAGLE-1 and EAGLE-3 heads: the CPU forward matches runtime/ref's on real
// target features (a catch-up and draft depths), and decoding with them is exact.
func TestShippedEagle(t *testing.T) {
	for _, mode := range []string{weights.EagleKind3, weights.EagleKind1} {
		t.Run(mode, func(t *testing.T) {
			tg, dir := shipped(t, mode)
			w, err := weights.LoadEagle(dir, mode, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.CheckTarget(&tg.W.Cfg); err != nil {
				t.Fatal(err)
			}
			var aux []int
			width := tg.W.Cfg.Dim
			if mode == weights.EagleKind3 {
				if aux, err = w.AuxLayers(tg.W.Cfg.NLayers); err != nil {
					t.Fatal(err)
				}
				width *= 3
			}
			toks := tg.Tok.Encode("Once upon a time, there was a little girl named Lily.", true)
			rows := make([]Row, len(toks))
			c := tg.M.NewCache()
			for i, tok := range toks {
				rows[i] = Row{Cache: c, Token: tok}
			}
			out, err := tg.M.Forward(rows, aux, false)
			if err != nil {
				t.Fatal(err)
			}
			feats := out.Aux
			if mode == weights.EagleKind1 {
				feats = make([]float32, len(out.Hidden))
				rmsNorm(feats, out.Hidden, tg.W.Norm, nil, len(toks), tg.W.Cfg.Dim, tg.W.Cfg.RMSEps)
			}
			n := len(toks) - 1 // rows 0..n-1 take tokens 1..n
			h, err := NewEagleHead(w, tg.M)
			if err != nil {
				t.Fatal(err)
			}
			got, want := h.NewState(), ref.NewEagleState(w, tg.W)
			l1, _ := got.Forward(toks[1:], feats[:n*width], width)
			l2, _ := want.Forward(toks[1:], feats[:n*width], width)
			maxRelDiff(t, mode+" logits", l1, l2, 1e-4)
			if d1, d2 := got.Draft(toks[n:], feats[n*width:(n+1)*width], width, 5), want.Draft(toks[n:], feats[n*width:(n+1)*width], width, 5); !slices.Equal(d1, d2) {
				t.Fatalf("%s drafts %v, ref %v", mode, d1, d2)
			}
			checkShipped(t, tg, mode, dir)
		})
	}
}

// The shipped Medusa heads: their drafts match ref.MedusaForward's, and decoding is exact.
func TestShippedMedusa(t *testing.T) {
	tg, dir := shipped(t, "medusa")
	m, err := weights.LoadMedusa(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSimMedusa(m, tg.M)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := Prompts("eval")
	refs, err := Reference(tg.M, tg.Encode(ps[:1]), 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	seq, H := refs[0], tg.W.Cfg.Dim
	s.Begin(seq)
	for n := seq.Prompt + 1; n < len(seq.Tokens); n += 5 {
		got := s.Propose(seq.Tokens[:n], m.Heads())
		_, want, err := ref.MedusaForward(m, seq.Hidden[(n-2)*H:(n-1)*H], tg.W.Norm, tg.W.Cfg.RMSEps, tg.W.LMHead)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("position %d: drafts %v, ref %v", n-2, got, want)
		}
	}
	checkShipped(t, tg, "medusa", dir)
}

// The shipped draft model: its CPU forward matches ref.LlamaState's, and decoding is exact.
func TestShippedDraftModel(t *testing.T) {
	tg, dir := shipped(t, "draft_model")
	w, err := weights.LoadLlama(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Cfg.Vocab != tg.W.Cfg.Vocab {
		t.Fatalf("vocabulary %d, the target's %d", w.Cfg.Vocab, tg.W.Cfg.Vocab)
	}
	testLlamaAgainstRef(t, w, tg.Tok.Encode("One day, a little fish swam too far from home.", true), 3)
	checkShipped(t, tg, "draft_model", dir)
}
