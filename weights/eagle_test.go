package weights

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testEagle is a small EAGLE head of kind with random weights (H 8, I 12, 2
// heads of 4, 1 kv head, vocabulary 10; EAGLE-3: target hidden 8, draft
// vocabulary 6 mapped by d2t).
func testEagle(kind string) *Eagle {
	c := Config{Arch: "llama", Dim: 8, HiddenDim: 12, NLayers: 1, NHeads: 2, NKVHeads: 1, HeadDim: 4,
		Vocab: 10, MaxSeq: 16, RopeTheta: 1e4, RMSEps: 1e-5, BOS: -1}
	H, I, q, kv := 8, 12, 8, 4
	seed := uint32(0)
	rnd := func(n int) []float32 { seed++; return randomFloats(n, seed) }
	e := &Eagle{Kind: kind, Cfg: c, TargetHidden: H, DraftVocab: c.Vocab}
	in := H
	if kind == EagleKind1 {
		e.FC, e.FCBias = rnd(H*2*H), rnd(H)
	} else {
		in = 2 * H
		e.DraftVocab = 6
		e.D2T = []int64{0, 1, 1, 2, 3, 4}
		e.FC = rnd(H * 3 * H)
		e.InputNorm, e.HidNorm, e.Norm = rnd(H), rnd(H), rnd(H)
		e.LMHead = rnd(e.DraftVocab * H)
	}
	e.Wq, e.Wk, e.Wv, e.Wo = rnd(q*in), rnd(kv*in), rnd(kv*in), rnd(H*q)
	e.WGate, e.WUp, e.WDown = rnd(I*H), rnd(I*H), rnd(H*I)
	e.PostNorm = rnd(H)
	return e
}

// writeEagleWith writes e with WriteEagle, then adds (or, with a nil Data,
// removes) tensors of model.safetensors.
func writeEagleWith(t *testing.T, e *Eagle, edit []Tensor) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteEagle(dir, e, EagleWriteOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, SingleFileName)
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []Tensor
	for _, n := range st.Names() {
		tt, _ := st.Tensor(n)
		tt.Data = slices.Clone(tt.Data)
		ts = append(ts, tt)
	}
	st.Close()
	for _, x := range edit {
		ts = slices.DeleteFunc(ts, func(t Tensor) bool { return t.Name == x.Name })
		if x.Data != nil {
			ts = append(ts, x)
		}
	}
	if err := WriteSafeTensors(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// An EAGLE checkpoint holding tensors the head does not read (a second layer
// while config.json declares one, an fc.bias while "bias" is false, both
// spellings of a layer) is refused with them named; t2d and rotary buffers
// are ignored.
func TestEagleRefusesUnused(t *testing.T) {
	f32 := func(name string, n int) Tensor { return F32Tensor(name, []int{n}, make([]float32, n)) }
	noBias := testEagle(EagleKind1)
	noBias.FCBias = nil
	cases := []struct {
		name, kind string
		head       *Eagle
		edit       []Tensor
		want       string // "" when accepted
	}{
		{"second layer", EagleKind1, testEagle(EagleKind1), []Tensor{f32("layers.1.post_attention_layernorm.weight", 8),
			F32Tensor("layers.1.self_attn.q_proj.weight", []int{8, 8}, make([]float32, 64))}, "layers.1.post_attention_layernorm.weight"},
		{"fc.bias with bias false", EagleKind1, noBias, []Tensor{f32("fc.bias", 8)}, `"fc.bias"`},
		{"lm_head in an EAGLE-1 head", EagleKind1, testEagle(EagleKind1), []Tensor{F32Tensor("lm_head.weight", []int{10, 8}, make([]float32, 80))}, "lm_head.weight"},
		{"eagle3 second layer", EagleKind3, testEagle(EagleKind3), []Tensor{f32("layers.1.post_attention_layernorm.weight", 8)}, "layers.1."},
		{"eagle3 both spellings", EagleKind3, testEagle(EagleKind3), []Tensor{f32("layers.0.post_attention_layernorm.weight", 8)}, "layers.0.post_attention_layernorm"},
		{"eagle3 model. duplicate", EagleKind3, testEagle(EagleKind3), []Tensor{f32("model.norm.weight", 8)}, "model.norm.weight"},
		{"eagle1 as written", EagleKind1, testEagle(EagleKind1), nil, ""},
		{"eagle3 as written, with t2d", EagleKind3, testEagle(EagleKind3), nil, ""},
		{"rotary buffers", EagleKind1, testEagle(EagleKind1), []Tensor{f32("layers.0.self_attn.rotary_emb.inv_freq", 2)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadEagle(writeEagleWith(t, tc.head, tc.edit), tc.kind, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnusedTensor) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrUnusedTensor naming %s", err, tc.want)
			}
		})
	}
}
