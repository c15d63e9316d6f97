package spec

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
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
		{"no target", "eagle", perfectEagle("eagle", tw, 1), nil, nil, ErrNeedsTarget, "target"},
	}
	for _, tc := range cases {
		dir := writeEagle(t, tc.head, weights.EagleWriteOptions{})
		if tc.edit != nil {
			rewriteTensors(t, dir, tc.edit)
		}
		env := Env{ModelDir: dir}
		if tc.target != nil {
			env.Target = tc.target
		}
		_, err := New(tc.kind, Config{Mode: tc.kind, NumSpeculativeTokens: 2, Model: dir}, env)
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
			w, err := weights.LoadEagle(dir, kind)
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
		if _, err := weights.LoadEagle(writeEagle(t, h, weights.EagleWriteOptions{DType: weights.BF16}), kind); err != nil {
			t.Errorf("%s: BF16: %v", kind, err)
		}
	}
}

// writeLlama saves w as a Hugging Face checkpoint folder (config.json, model.safetensors).
func writeLlama(t *testing.T, w *weights.LlamaWeights) string {
	t.Helper()
	dir := t.TempDir()
	c := w.Cfg
	c.BOS = -1
	if err := weights.WriteConfig(dir, &c); err != nil {
		t.Fatal(err)
	}
	get := map[string][]float32{weights.EmbedTensorName: w.Embed, weights.NormTensorName: w.Norm, weights.LMHeadTensorName: w.LMHead}
	for i, ly := range w.Layers {
		for suffix, v := range map[string][]float32{weights.AttnNormSuffix: ly.AttnNorm, weights.WqSuffix: ly.Wq,
			weights.WkSuffix: ly.Wk, weights.WvSuffix: ly.Wv, weights.WoSuffix: ly.Wo, weights.FFNNormSuffix: ly.FFNNorm,
			weights.GateSuffix: ly.WGate, weights.UpSuffix: ly.WUp, weights.DownSuffix: ly.WDown} {
			get[weights.LayerTensorName(i, suffix)] = v
		}
	}
	var ts []weights.Tensor
	for _, s := range c.ExpectedTensors() {
		ts = append(ts, weights.F32Tensor(s.Name, s.Shape, get[s.Name]))
	}
	if err := weights.WriteSafeTensors(filepath.Join(dir, weights.SingleFileName), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The engine makes the target with the residual snapshots an eagle3 drafter reads: the
// default layers, or eagle_aux_hidden_state_layer_ids as vLLM reads them (the input of
// layer id); a target made without them is remade before the drafter is.
func TestEagleEngineAuxLayers(t *testing.T) {
	tw := eagleTarget(1, 0)
	h := perfectEagle(weights.EagleKind3, tw, 1)
	def := writeEagle(t, h, weights.EagleWriteOptions{})
	h.AuxLayerIDs = []int{1, 3, 0}
	explicit := writeEagle(t, h, weights.EagleWriteOptions{})
	for dir, want := range map[string][]int{def: {2, 2, 1}, explicit: {1, 3, 0}} {
		got, err := EagleAuxLayers(&Config{Mode: "EAGLE3", NumSpeculativeTokens: 3, Model: dir}, &tw.Cfg)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("EagleAuxLayers = %v, %v; want %v", got, err, want)
		}
	}
	if got, err := EagleAuxLayers(&Config{Mode: "eagle", NumSpeculativeTokens: 3, Model: def}, &tw.Cfg); got != nil || err != nil {
		t.Errorf("eagle (EAGLE-1) asks for aux layers %v, %v", got, err)
	}
	m := eagleModel(t, tw, weights.EagleKind1) // no aux layers
	e := &Engine{Device: loopDevice(t), Model: m, Config: &tw.Cfg, Dir: writeLlama(t, tw)}
	sc := &Config{Mode: "eagle3", NumSpeculativeTokens: 3, Model: explicit}
	if err := e.ensureAuxLayers(sc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Model.Opts.AuxLayers, []int{1, 3, 0}) {
		t.Fatalf("target remade with aux layers %v", e.Model.Opts.AuxLayers)
	}
	d, err := NewDrafter(*sc, Env{Target: e.Model, ModelDir: explicit})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := decode(t, tw, e.Model, nil, loopPrompt, 0, 20, model.Sampling{}, nil)
	if got, _ := decode(t, tw, e.Model, d, loopPrompt, 3, 20, model.Sampling{}, nil); !slices.Equal(got, want) {
		t.Errorf("eagle3 on the remade target: %v, want %v", got, want)
	}
}
