package weights

import (
	"fmt"
	"slices"
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
	FFNNormSuffix  = "post_attention_layernorm.weight"
	GateSuffix     = "mlp.gate_proj.weight" // w1
	UpSuffix       = "mlp.up_proj.weight"   // w3
	DownSuffix     = "mlp.down_proj.weight" // w2
)

// LayerTensorName is the name of layer i's tensor with the given suffix,
// e.g. LayerTensorName(3, WqSuffix) == "model.layers.3.self_attn.q_proj.weight".
func LayerTensorName(i int, suffix string) string {
	return fmt.Sprintf("model.layers.%d.%s", i, suffix)
}

// TensorSpec is the name and shape of a tensor the Llama forward pass reads.
type TensorSpec struct {
	Name  string
	Shape []int
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
		add(FFNNormSuffix, dim)
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
// right shape and a float dtype (F32, F16 or BF16). It reports the first
// problem: ErrMissingTensor, ErrShape or ErrDType, naming the tensor.
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
	return nil
}
