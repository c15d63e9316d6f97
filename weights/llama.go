package weights

import "fmt"

// LlamaWeights is a Llama-family decoder (llama, mistral, qwen2, qwen3) in float32 host memory, every
// matrix in the Hugging Face [out, in] layout. With q = NHeads*HeadDim, kv = NKVHeads*HeadDim
// and hidden = HiddenDim:
type LlamaWeights struct {
	Cfg    Config
	Embed  []float32 // [vocab, dim] token embedding
	Layers []LlamaLayer
	Norm   []float32 // [dim] final RMSNorm weight
	LMHead []float32 // [vocab, dim] output projection (aliases Embed when tied)
}

// LlamaLayer is one decoder block's weights (model.layers.N.* in Hugging Face names).
type LlamaLayer struct {
	AttnNorm []float32 // [dim]         input_layernorm
	Wq       []float32 // [q, dim]      self_attn.q_proj
	Wk       []float32 // [kv, dim]     self_attn.k_proj
	Wv       []float32 // [kv, dim]     self_attn.v_proj
	Wo       []float32 // [dim, q]      self_attn.o_proj
	Bq       []float32 // [q]  or nil   q_proj.bias (Cfg.AttnBias)
	Bk       []float32 // [kv] or nil   k_proj.bias
	Bv       []float32 // [kv] or nil   v_proj.bias
	QNorm    []float32 // [hd] or nil   self_attn.q_norm (Cfg.QKNorm), every q head
	KNorm    []float32 // [hd] or nil   self_attn.k_norm, every k head
	FFNNorm  []float32 // [dim]         post_attention_layernorm (Gemma: pre_feedforward_layernorm)
	PostAttn []float32 // [dim] or nil  Gemma's post_attention_layernorm (Cfg.PostNorms)
	PostFFN  []float32 // [dim] or nil  Gemma's post_feedforward_layernorm
	WGate    []float32 // [hidden, dim] mlp.gate_proj
	WUp      []float32 // [hidden, dim] mlp.up_proj
	WDown    []float32 // [dim, hidden] mlp.down_proj
}

// Progress is told how many bytes of tensors have been read of how many.
type Progress func(done, total int64)

// LoadLlama reads a Llama-family checkpoint folder (config.json + safetensors) into float32
// host memory, checking every tensor's presence and shape against the config first. progress
// may be nil.
func LoadLlama(dir string, progress Progress) (*LlamaWeights, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	ck, err := openCheckpointWithin(dir, cfg.budget(0))
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	return LlamaFrom(cfg, ck, progress)
}

// LlamaFrom reads the tensors of cfg's architecture from src (a checkpoint, or a GGUF file's
// tensors, quantized ones decoded) into host memory as float32 (progress may be nil).
func LlamaFrom(cfg *Config, src TensorSource, progress Progress) (*LlamaWeights, error) {
	if err := cfg.checkSource(src); err != nil {
		return nil, err
	}
	var total, done int64
	for _, spec := range cfg.ExpectedTensors() { // what is read (a tied copy of the LM head is not)
		_, _, b, _ := src.Shape(spec.Name)
		total += b
	}
	var firstErr error
	get := func(name string) []float32 {
		rows, cols, b, err := src.Shape(name)
		if err == nil {
			v := make([]float32, rows*cols)
			if err = src.Rows(name, 0, v); err == nil {
				if done += b; progress != nil {
					progress(done, total)
				}
				return v
			}
			err = fmt.Errorf("tensor %s: %w", name, err)
		}
		if firstErr == nil {
			firstErr = err
		}
		return nil
	}
	w := &LlamaWeights{Cfg: *cfg}
	w.Embed = get(EmbedTensorName)
	w.Norm = get(NormTensorName)
	if cfg.TieEmbed {
		w.LMHead = w.Embed
	} else {
		w.LMHead = get(LMHeadTensorName)
	}
	for i := 0; i < cfg.NLayers; i++ {
		l := func(s string) []float32 { return get(LayerTensorName(i, s)) }
		ly := LlamaLayer{
			AttnNorm: l(AttnNormSuffix), FFNNorm: l(cfg.FFNNormSuffix()),
			Wq: l(WqSuffix), Wk: l(WkSuffix), Wv: l(WvSuffix), Wo: l(WoSuffix),
			WGate: l(GateSuffix), WUp: l(UpSuffix), WDown: l(DownSuffix),
		}
		if cfg.AttnBias {
			ly.Bq, ly.Bk, ly.Bv = l(BqSuffix), l(BkSuffix), l(BvSuffix)
		}
		if cfg.QKNorm {
			ly.QNorm, ly.KNorm = l(QNormSuffix), l(KNormSuffix)
		}
		if cfg.PostNorms {
			ly.PostAttn, ly.PostFFN = l(PostAttnNormSuffix), l(PostFFNNormSuffix)
		}
		w.Layers = append(w.Layers, ly)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return w, nil
}

// String describes the model's shape.
func (w *LlamaWeights) String() string {
	c := w.Cfg
	return fmt.Sprintf("llama{dim %d, hidden %d, layers %d, heads %d/%d x %d, vocab %d}",
		c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.HeadDim, c.Vocab)
}
