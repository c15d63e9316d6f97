package neural

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// rewriteTensors replaces dir's model.safetensors by edit of its tensors.
func rewriteTensors(t *testing.T, dir string, edit func([]weights.Tensor) []weights.Tensor) {
	t.Helper()
	path := filepath.Join(dir, weights.SingleFileName)
	st, err := weights.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []weights.Tensor
	for _, n := range st.Names() {
		tt, _ := st.Tensor(n)
		tt.Data = slices.Clone(tt.Data)
		ts = append(ts, tt)
	}
	st.Close()
	if err := weights.WriteSafeTensors(path, edit(ts), nil); err != nil {
		t.Fatal(err)
	}
}

func without(name string) func([]weights.Tensor) []weights.Tensor {
	return func(ts []weights.Tensor) []weights.Tensor {
		return slices.DeleteFunc(ts, func(t weights.Tensor) bool { return t.Name == name })
	}
}

func editTensor(name string, f func(*weights.Tensor)) func([]weights.Tensor) []weights.Tensor {
	return func(ts []weights.Tensor) []weights.Tensor {
		for i := range ts {
			if ts[i].Name == name {
				f(&ts[i])
			}
		}
		return ts
	}
}

// Malformed EAGLE checkpoints, and heads that do not fit the target, give errors that say
// what is wrong (and wrap the weights package's sentinels).
func TestEagleMalformed(t *testing.T) {
	tw := eagleTarget(1, 0)
	m1, m3 := eagleModel(t, tw, weights.EagleKind1), eagleModel(t, tw, weights.EagleKind3)
	small := eagleTargetCfg
	small.Dim, small.HeadDim, small.BOS = 32, 8, -1
	cases := []struct {
		name, kind string
		head       *weights.Eagle
		edit       func([]weights.Tensor) []weights.Tensor
		target     *model.Model
		sentinel   error
		mention    string
	}{
		{"missing fc", "eagle", perfectEagle("eagle", tw, 1), without("fc.weight"), m1, weights.ErrMissingTensor, "fc.weight"},
		{"missing fc bias", "eagle", perfectEagle("eagle", tw, 1), without("fc.bias"), m1, weights.ErrMissingTensor, "fc.bias"},
		{"missing post norm", "eagle", perfectEagle("eagle", tw, 1), without("layers.0.post_attention_layernorm.weight"), m1, weights.ErrMissingTensor, "post_attention_layernorm"},
		{"fc shape", "eagle", perfectEagle("eagle", tw, 1), editTensor("fc.weight", func(t *weights.Tensor) {
			t.Shape = []int{2 * t.Shape[0], t.Shape[1] / 2}
		}), m1, weights.ErrShape, "fc.weight"},
		{"width", "eagle", ref.RandomEagle("eagle", small, tw.Cfg, 0, 1), nil, m1, weights.ErrBadEagle, "hidden_size 32"},
		{"eagle3 as eagle", "eagle", perfectEagle("eagle3", tw, 1), nil, m1, weights.ErrBadEagle, "eagle3"},
		{"d2t range", "eagle3", perfectEagle("eagle3", tw, 1), editTensor("d2t", func(t *weights.Tensor) {
			binary.LittleEndian.PutUint64(t.Data[8*5:], 1000)
		}), m3, weights.ErrBadEagle, "d2t[5]"},
		{"d2t dtype", "eagle3", perfectEagle("eagle3", tw, 1), editTensor("d2t", func(t *weights.Tensor) {
			t.DType = weights.F64
		}), m3, weights.ErrDType, "want I64"},
		{"d2t missing", "eagle3", ref.RandomEagle("eagle3", small, tw.Cfg, 50, 1), without("d2t"), m3, weights.ErrMissingTensor, "draft_vocab_size 50"},
		{"lm_head shape", "eagle3", ref.RandomEagle("eagle3", small, tw.Cfg, 50, 1), editTensor("lm_head.weight", func(t *weights.Tensor) {
			t.Shape = []int{t.Shape[1], t.Shape[0]}
		}), m3, weights.ErrShape, "lm_head"},
		{"fc width", "eagle3", ref.RandomEagle("eagle3", small, small, 0, 1), nil, m3, weights.ErrBadEagle, "target_hidden_size 32"},
		{"no aux", "eagle3", perfectEagle("eagle3", tw, 1), nil, m1, model.ErrEagle, "AuxLayers"},
		{"no target", "eagle", perfectEagle("eagle", tw, 1), nil, nil, spec.ErrNeedsTarget, "target"},
	}
	for _, tc := range cases {
		dir := writeEagle(t, tc.head, weights.EagleWriteOptions{})
		if tc.edit != nil {
			rewriteTensors(t, dir, tc.edit)
		}
		_, err := openDrafter(t, spec.Config{Mode: tc.kind, NumSpeculativeTokens: 2, Model: dir}, tc.target)
		t.Logf("%s: %v", tc.name, err)
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: got %v, want an error wrapping %v that mentions %q", tc.name, err, tc.sentinel, tc.mention)
		}
	}
}

// Names with vLLM's "model." prefix, EAGLE-3's "layers.0." for "midlayer." and F16 storage
// load to the same head as the published spelling.
func TestEagleSpellings(t *testing.T) {
	tw := eagleTarget(1, 0)
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		h := perfectEagle(kind, tw, 2)
		load := func(o weights.EagleWriteOptions, edit func([]weights.Tensor) []weights.Tensor) *weights.Eagle {
			dir := writeEagle(t, h, o)
			if edit != nil {
				rewriteTensors(t, dir, edit)
			}
			w, err := weights.LoadEagle(dir, kind, nil)
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			return w
		}
		plain := load(weights.EagleWriteOptions{}, nil)
		if got := load(weights.EagleWriteOptions{Prefix: true}, nil); !reflect.DeepEqual(got, plain) {
			t.Errorf("%s: model.-prefixed names load differently", kind)
		}
		renamed := load(weights.EagleWriteOptions{}, func(ts []weights.Tensor) []weights.Tensor {
			for i := range ts {
				ts[i].Name = strings.Replace(ts[i].Name, "midlayer.", "layers.0.", 1)
			}
			return ts
		})
		if !reflect.DeepEqual(renamed, plain) {
			t.Errorf("%s: layers.0. names load differently", kind)
		}
		if _, err := weights.LoadEagle(writeEagle(t, h, weights.EagleWriteOptions{DType: weights.BF16}), kind, nil); err != nil {
			t.Errorf("%s: BF16: %v", kind, err)
		}
	}
}

// An eagle3 checkpoint tells which target layers' input it reads (AuxLayers): the default
// layers, or eagle_aux_hidden_state_layer_ids as vLLM reads them (the input of layer id); an
// EAGLE-1 head reads none. A target made with them drafts exactly; one made without them
// refuses the head.
func TestEagleAuxLayers(t *testing.T) {
	tw := eagleTarget(1, 0)
	h := perfectEagle(weights.EagleKind3, tw, 1)
	def := writeEagle(t, h, weights.EagleWriteOptions{})
	h.AuxLayerIDs = []int{1, 3, 0}
	explicit := writeEagle(t, h, weights.EagleWriteOptions{})
	aux := func(mode, dir string) []int {
		t.Helper()
		ck, err := spec.Open(spec.Config{Mode: mode, NumSpeculativeTokens: 3, Model: dir}, &tw.Cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ck.Needs().AuxLayers
	}
	for dir, want := range map[string][]int{def: {2, 2, 1}, explicit: {1, 3, 0}} {
		if got := aux("eagle3", dir); !slices.Equal(got, want) {
			t.Errorf("AuxLayers = %v; want %v", got, want)
		}
	}
	if got := aux("eagle", writeEagle(t, perfectEagle(weights.EagleKind1, tw, 1), weights.EagleWriteOptions{})); got != nil {
		t.Errorf("eagle (EAGLE-1) asks for aux layers %v", got)
	}
	sc := spec.Config{Mode: "eagle3", NumSpeculativeTokens: 3, Model: explicit}
	if _, err := openDrafter(t, sc, eagleModel(t, tw, weights.EagleKind1)); !errors.Is(err, model.ErrEagle) {
		t.Fatalf("eagle3 on a target without aux layers: %v", err)
	}
	m, err := model.New(loopDevice(t), tw, model.Options{PageSize: 8, PrefillChunk: 32, AuxLayers: []int{1, 3, 0}, FeatureSlots: model.SlotPerSequence})
	if err != nil {
		t.Fatal(err)
	}
	d, err := openDrafter(t, sc, m)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := decode(t, tw, m, nil, loopPrompt, 0, 20, batch.Sampling{}, nil)
	if got, _ := decode(t, tw, m, d, loopPrompt, 3, 20, batch.Sampling{}, nil); !slices.Equal(got, want) {
		t.Errorf("eagle3: %v, want %v", got, want)
	}
}
