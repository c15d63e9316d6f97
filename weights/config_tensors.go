package weights

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Hugging Face Llama tensor names outside the layers.
const (
	EmbedTensorName  = "model.embed_tokens.weight"
	NormTensorName   = "model.norm.weight"
	LMHeadTensorName = "lm_head.weight"
)

// Suffixes of the per-layer tensors, for LayerTensorName.
const (
	AttnNormSuffix = "input_layernorm.weight"
	WqSuffix       = "self_attn.q_proj.weight"
	WkSuffix       = "self_attn.k_proj.weight"
	WvSuffix       = "self_attn.v_proj.weight"
	WoSuffix       = "self_attn.o_proj.weight"
	BqSuffix       = "self_attn.q_proj.bias"
	BkSuffix       = "self_attn.k_proj.bias"
	BvSuffix       = "self_attn.v_proj.bias"
	QNormSuffix    = "self_attn.q_norm.weight" // [head_dim], qwen3
	KNormSuffix    = "self_attn.k_norm.weight" // [head_dim], qwen3
	// Gemma 3's norms around attention and the MLP (its post_attention_layernorm is the norm of
	// the attention's output, not the MLP's input norm as in Llama).
	PostAttnNormSuffix = "post_attention_layernorm.weight"
	PreFFNNormSuffix   = "pre_feedforward_layernorm.weight"
	PostFFNNormSuffix  = "post_feedforward_layernorm.weight"
	FFNNormSuffix      = "post_attention_layernorm.weight"
	GateSuffix         = "mlp.gate_proj.weight" // w1
	UpSuffix           = "mlp.up_proj.weight"   // w3
	DownSuffix         = "mlp.down_proj.weight" // w2
)

// LayerTensorName is the name of layer i's tensor with the given suffix,
// e.g. LayerTensorName(3, WqSuffix) == "model.layers.3.self_attn.q_proj.weight".
func LayerTensorName(i int, suffix string) string {
	return fmt.Sprintf("model.layers.%d.%s", i, suffix)
}

// FFNNormSuffix is the suffix of the MLP's input norm: post_attention_layernorm in Llama,
// pre_feedforward_layernorm in Gemma 3.
func (c *Config) FFNNormSuffix() string {
	if c.PostNorms {
		return PreFFNNormSuffix
	}
	return FFNNormSuffix
}

// TensorSpec is the name and shape of a tensor the Llama forward pass reads.
type TensorSpec struct {
	Name  string
	Shape []int
}

// budget bounds the tensor bytes a checkpoint of c may hold: its expected tensors in F32 (the
// widest type read), a stored LM head beside a tied embedding, and extra (elements) more, plus
// a MiB for what the loaders ignore (rotary tables, ...).
func (c *Config) budget(extra int64) *dataBudget {
	n := int64(c.Vocab) * int64(c.Dim)
	for _, t := range c.ExpectedTensors() {
		k := int64(1)
		for _, d := range t.Shape {
			k *= int64(d)
		}
		n += k
	}
	return &dataBudget{left: 4*(n+extra) + 1<<20, why: "config.json"}
}

// ExpectedTensors lists every tensor the Llama forward pass needs for c, in
// file order: the embedding, each layer's tensors, the final norm and (unless
// TieEmbed) the LM head. Linear weights are [out, in] as in PyTorch.
func (c *Config) ExpectedTensors() []TensorSpec {
	dim, hd := c.Dim, c.HeadDim
	q, kv := c.NHeads*hd, c.NKVHeads*hd
	specs := []TensorSpec{{EmbedTensorName, []int{c.Vocab, dim}}}
	for i := 0; i < c.NLayers; i++ {
		add := func(suffix string, shape ...int) {
			specs = append(specs, TensorSpec{LayerTensorName(i, suffix), shape})
		}
		add(AttnNormSuffix, dim)
		add(WqSuffix, q, dim)
		add(WkSuffix, kv, dim)
		add(WvSuffix, kv, dim)
		add(WoSuffix, dim, q)
		if c.AttnBias {
			add(BqSuffix, q)
			add(BkSuffix, kv)
			add(BvSuffix, kv)
		}
		if c.QKNorm {
			add(QNormSuffix, hd)
			add(KNormSuffix, hd)
		}
		if c.PostNorms {
			add(PostAttnNormSuffix, dim)
			add(PostFFNNormSuffix, dim)
		}
		add(c.FFNNormSuffix(), dim)
		add(GateSuffix, c.HiddenDim, dim)
		add(UpSuffix, c.HiddenDim, dim)
		add(DownSuffix, dim, c.HiddenDim)
	}
	specs = append(specs, TensorSpec{NormTensorName, []int{dim}})
	if !c.TieEmbed {
		specs = append(specs, TensorSpec{LMHeadTensorName, []int{c.Vocab, dim}})
	}
	return specs
}

// CheckTensors checks that ck holds every tensor of ExpectedTensors with the
// right shape and a float dtype (F32, F16 or BF16), and nothing else the
// forward pass would skip. It reports the first problem: ErrMissingTensor,
// ErrShape or ErrDType naming the tensor, or ErrUnusedTensor naming the
// tensors the config does not read (a config.json that declares fewer layers
// than the file holds, no biases where the file has them, ...).
//
// Two kinds of tensor may be present and are ignored: lm_head.weight when
// tie_word_embeddings is true (Hugging Face sometimes saves it; the embedding
// is used), and the rotary_emb.inv_freq buffers of old Hugging Face
// checkpoints (RoPE frequencies are computed from rope_theta).
func (c *Config) CheckTensors(ck *Checkpoint) error {
	if err := c.Validate(); err != nil {
		return err
	}
	for _, spec := range c.ExpectedTensors() {
		t, err := ck.Tensor(spec.Name)
		if err != nil {
			return err
		}
		if !slices.Equal(t.Shape, spec.Shape) {
			return fmt.Errorf("%w: %q is %v, want %v", ErrShape, spec.Name, t.Shape, spec.Shape)
		}
		if !t.DType.IsFloat() {
			return fmt.Errorf("%w: %q is %s, want F32, F16 or BF16", ErrDType, spec.Name, t.DType)
		}
	}
	return c.checkUnused(ck)
}

// layerIndexRE picks the layer index out of a per-layer tensor name.
var layerIndexRE = regexp.MustCompile(`^model\.layers\.(\d+)\.`)

// checkUnused refuses tensors of ck that ExpectedTensors does not list and
// that are not ignorable (see CheckTensors).
func (c *Config) checkUnused(ck *Checkpoint) error {
	want := make(map[string]bool)
	for _, spec := range c.ExpectedTensors() {
		want[spec.Name] = true
	}
	var unused []string
	maxLayer := -1
	for _, name := range ck.Names() {
		if want[name] || c.ignorable(name) {
			continue
		}
		unused = append(unused, name)
		if m := layerIndexRE.FindStringSubmatch(name); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil {
				maxLayer = max(maxLayer, i)
			}
		}
	}
	if len(unused) == 0 {
		return nil
	}
	hint := ""
	if maxLayer >= c.NLayers {
		hint = fmt.Sprintf(" (the file has layers 0..%d, num_hidden_layers is %d)", maxLayer, c.NLayers)
	}
	return fmt.Errorf("%w: checkpoint %s holds %s that config.json does not use%s: %s",
		ErrUnusedTensor, ck.Dir(), countTensors(len(unused)), hint, listNames(unused))
}

// ignorable reports whether a tensor outside ExpectedTensors may be present.
func (c *Config) ignorable(name string) bool {
	if name == LMHeadTensorName {
		return c.TieEmbed
	}
	if name == "model.rotary_emb.inv_freq" {
		return true
	}
	rest, ok := strings.CutSuffix(name, ".self_attn.rotary_emb.inv_freq")
	if !ok {
		return false
	}
	i, err := strconv.Atoi(strings.TrimPrefix(rest, "model.layers."))
	return err == nil && strings.HasPrefix(rest, "model.layers.") && i >= 0 && i < c.NLayers
}

// countTensors is "1 tensor" or "N tensors".
func countTensors(n int) string {
	if n == 1 {
		return "1 tensor"
	}
	return fmt.Sprintf("%d tensors", n)
}

// listNames quotes the first few names, then says how many more there are:
// "a", "b", "c", "d", "e" and 7 more.
func listNames(names []string) string {
	const shown = 5
	var b strings.Builder
	for i, n := range names[:min(len(names), shown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	if len(names) > shown {
		fmt.Fprintf(&b, " and %d more", len(names)-shown)
	}
	return b.String()
}
