package weights

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
)

// EagleWriteOptions choose how WriteEagle spells a checkpoint.
type EagleWriteOptions struct {
	DType  DType // F32 (default), F16 or BF16 for the float tensors
	Prefix bool  // prefix every name but lm_head and d2t with "model." (vLLM's spelling)
}

// WriteEagle writes e to dir in the published layout: config.json (a LlamaConfig with
// num_hidden_layers 1 plus "bias", and for EAGLE-3 draft_vocab_size, target_hidden_size
// and eagle_config.eagle_aux_hidden_state_layer_ids when set) and model.safetensors (for
// EAGLE-3 with d2t as I64 and t2d as BOOL). Tools and tests use it; LoadEagle reads it back.
func WriteEagle(dir string, e *Eagle, o EagleWriteOptions) error {
	c := e.Cfg
	c.NLayers = 1
	if err := WriteConfig(dir, &c); err != nil {
		return err
	}
	err := editConfig(dir, func(j map[string]any) {
		j["bias"] = e.FCBias != nil
		if e.Kind == EagleKind3 {
			j["architectures"] = []string{"LlamaForCausalLMEagle3"}
			j["draft_vocab_size"] = e.DraftVocab
			j["target_hidden_size"] = e.TargetHidden
			if e.AuxLayerIDs != nil {
				j["eagle_config"] = map[string]any{"eagle_aux_hidden_state_layer_ids": e.AuxLayerIDs, "use_aux_hidden_state": true}
			}
		}
	})
	if err != nil {
		return err
	}

	H, I := c.Dim, c.HiddenDim
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	in, pre := H, "layers.0."
	if e.Kind == EagleKind3 {
		in, pre = 2*H, "midlayer."
	}
	var ts []Tensor
	add := func(name string, v []float32, shape ...int) {
		if v == nil {
			return
		}
		if o.Prefix && name != LMHeadTensorName {
			name = "model." + name
		}
		switch o.DType {
		case F16:
			ts = append(ts, F16Tensor(name, shape, v))
		case BF16:
			ts = append(ts, BF16Tensor(name, shape, v))
		default:
			ts = append(ts, F32Tensor(name, shape, v))
		}
	}
	add("embed_tokens.weight", e.Embed, c.Vocab, H)
	if e.Kind == EagleKind3 {
		add("fc.weight", e.FC, H, 3*e.TargetHidden)
	} else {
		add("fc.weight", e.FC, H, 2*H)
	}
	add("fc.bias", e.FCBias, H)
	add(pre+"input_layernorm.weight", e.InputNorm, H)
	add(pre+"hidden_norm.weight", e.HidNorm, H)
	add(pre+WqSuffix, e.Wq, q, in)
	add(pre+WkSuffix, e.Wk, kv, in)
	add(pre+WvSuffix, e.Wv, kv, in)
	add(pre+WoSuffix, e.Wo, H, q)
	add(pre+FFNNormSuffix, e.PostNorm, H)
	add(pre+GateSuffix, e.WGate, I, H)
	add(pre+UpSuffix, e.WUp, I, H)
	add(pre+DownSuffix, e.WDown, H, I)
	add("norm.weight", e.Norm, H)
	add(LMHeadTensorName, e.LMHead, e.DraftVocab, H)
	if e.Kind == EagleKind3 && e.D2T != nil {
		if len(e.D2T) != e.DraftVocab {
			return fmt.Errorf("%w: d2t has %d entries, draft_vocab_size is %d", ErrBadEagle, len(e.D2T), e.DraftVocab)
		}
		d2t := make([]byte, 8*len(e.D2T))
		t2d := make([]byte, c.Vocab)
		for i, d := range e.D2T {
			binary.LittleEndian.PutUint64(d2t[8*i:], uint64(d))
			if to := int64(i) + d; to >= 0 && to < int64(c.Vocab) {
				t2d[to] = 1
			}
		}
		ts = append(ts, Tensor{Name: "d2t", DType: I64, Shape: []int{len(e.D2T)}, Data: d2t},
			Tensor{Name: "t2d", DType: Bool, Shape: []int{c.Vocab}, Data: t2d})
	}
	return WriteSafeTensors(filepath.Join(dir, SingleFileName), ts, map[string]string{"format": "pt"})
}
