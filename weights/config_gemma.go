package weights

import (
	"encoding/json"
	"fmt"
	"math"
)

// gemmaJSON is what config.json says of Gemma 3's differences (Gemma3TextConfig).
type gemmaJSON struct {
	HiddenActivation      *string  `json:"hidden_activation"`
	QueryPreAttnScalar    *float64 `json:"query_pre_attn_scalar"`
	RopeLocalBaseFreq     *float64 `json:"rope_local_base_freq"`
	SlidingWindowPattern  *int     `json:"sliding_window_pattern"`
	LayerTypes            []string `json:"layer_types"`
	FinalLogitSoftcapping *float64 `json:"final_logit_softcapping"`
	AttnLogitSoftcapping  *float64 `json:"attn_logit_softcapping"`
}

// parseGemma3 fills c's Gemma 3 fields from j (model_type gemma3_text): norms as 1 + w, the
// embedding scaled by sqrt(hidden), GeGLU with tanh GELU, norms after attention and the MLP,
// q/k norms, attention scaled by query_pre_attn_scalar^-0.5, and sliding-window layers (every
// sliding_window_pattern-th layer global, or as layer_types lists them) with their own rope
// base. Gemma3TextConfig's defaults fill what is absent.
func parseGemma3(j *configJSON, c *Config) error {
	g := j.gemmaJSON
	act := "gelu_pytorch_tanh"
	if g.HiddenActivation != nil {
		act = *g.HiddenActivation
	} else if j.HiddenAct != nil {
		act = *j.HiddenAct
	}
	if act != "gelu_pytorch_tanh" {
		return fmt.Errorf("%w: gemma3 hidden_activation %q (only gelu_pytorch_tanh)", ErrUnsupported, act)
	}
	for _, s := range []*float64{g.FinalLogitSoftcapping, g.AttnLogitSoftcapping} {
		if s != nil && *s != 0 {
			return fmt.Errorf("%w: gemma3 logit soft-capping", ErrUnsupported)
		}
	}
	if j.RopeScaling != nil && string(j.RopeScaling) != "null" {
		var rs struct {
			RopeType string `json:"rope_type"`
		}
		json.Unmarshal(j.RopeScaling, &rs)
		// the 4B and larger models scale their global layers' rope linearly
		if rs.RopeType != "default" && rs.RopeType != "linear" {
			return fmt.Errorf("%w: gemma3 rope_scaling %q (default or linear)", ErrUnsupported, rs.RopeType)
		}
	}
	c.NormPlusOne, c.GeluTanh, c.PostNorms, c.QKNorm = true, true, true, true
	if j.TieWordEmbeddings == nil {
		c.TieEmbed = true // Gemma3TextConfig's default: gemma-3-1b's config.json says nothing
	}
	c.EmbedScale = math.Sqrt(float64(c.Dim))
	c.RopeLocalTheta = 10000
	if g.RopeLocalBaseFreq != nil {
		c.RopeLocalTheta = *g.RopeLocalBaseFreq
	}
	if j.HeadDim == nil {
		c.HeadDim = 256
	}
	scalar := float64(c.HeadDim)
	if g.QueryPreAttnScalar != nil {
		scalar = *g.QueryPreAttnScalar
	}
	if !(scalar > 0) {
		return fmt.Errorf("%w: query_pre_attn_scalar %v", ErrBadConfig, scalar)
	}
	c.AttnScale = 1 / math.Sqrt(scalar)
	c.SlidingWindow = 4096
	if j.SlidingWindow != nil {
		c.SlidingWindow = *j.SlidingWindow
	}
	if c.NLayers <= 0 || c.NLayers > maxLayers {
		return nil // Validate names the bad size
	}
	c.SlidingLayers = make([]bool, c.NLayers)
	switch {
	case len(g.LayerTypes) > 0:
		if len(g.LayerTypes) != c.NLayers {
			return fmt.Errorf("%w: layer_types lists %d layers, num_hidden_layers is %d", ErrBadConfig, len(g.LayerTypes), c.NLayers)
		}
		for i, t := range g.LayerTypes {
			switch t {
			case "sliding_attention":
				c.SlidingLayers[i] = true
			case "full_attention":
			default:
				return fmt.Errorf("%w: layer_types[%d] %q", ErrBadConfig, i, t)
			}
		}
	default:
		pattern := 6
		if g.SlidingWindowPattern != nil {
			pattern = *g.SlidingWindowPattern
		}
		if pattern < 1 {
			return fmt.Errorf("%w: sliding_window_pattern %d", ErrBadConfig, pattern)
		}
		for i := range c.SlidingLayers {
			c.SlidingLayers[i] = (i+1)%pattern != 0
		}
	}
	return nil
}

// validateGemma checks the Gemma fields of a config.
func (c *Config) validateGemma() error {
	if c.SlidingLayers != nil && len(c.SlidingLayers) != c.NLayers {
		return fmt.Errorf("%w: %d sliding-layer flags for %d layers", ErrBadConfig, len(c.SlidingLayers), c.NLayers)
	}
	if c.SlidingWindow < 0 || (c.SlidingWindow > 0 && !(c.RopeLocalTheta > 0)) {
		return fmt.Errorf("%w: sliding_window %d with rope_local_base_freq %v", ErrBadConfig, c.SlidingWindow, c.RopeLocalTheta)
	}
	if c.EmbedScale < 0 || c.AttnScale < 0 || math.IsNaN(c.EmbedScale) || math.IsNaN(c.AttnScale) {
		return fmt.Errorf("%w: embedding scale %v, attention scale %v", ErrBadConfig, c.EmbedScale, c.AttnScale)
	}
	return nil
}

// Sliding says whether layer l attends to a sliding window (of SlidingWindow tokens).
func (c *Config) Sliding(l int) bool {
	return c.SlidingWindow > 0 && l < len(c.SlidingLayers) && c.SlidingLayers[l]
}

// LayerRopeTheta is layer l's rope base: RopeLocalTheta for a sliding layer.
func (c *Config) LayerRopeTheta(l int) float64 {
	if c.Sliding(l) {
		return c.RopeLocalTheta
	}
	return c.RopeTheta
}

// gemma3TextDefaults are Gemma3TextConfig's defaults (transformers) for the sizes a
// multimodal Gemma 3 config.json may leave out of its text_config.
var gemma3TextDefaults = map[string]any{"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
	"num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
	"max_position_embeddings": 131072, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6}

// gemma3TextConfig turns a multimodal Gemma 3 config.json (model_type gemma3: the 4B and
// larger models, Gemma3ForConditionalGeneration) into its language model's (model_type
// gemma3_text): text_config, with Gemma3TextConfig's defaults for the sizes it leaves out and
// the top level's token ids and tying where it has none. The vision tower is not run (wspec
// is text only; the checkpoint hides its tensors).
func gemma3TextConfig(b []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	var text map[string]json.RawMessage
	if raw, ok := top["text_config"]; !ok || json.Unmarshal(raw, &text) != nil || text == nil {
		return nil, fmt.Errorf("%w: model_type gemma3 without a text_config object", ErrBadConfig)
	}
	for k, v := range gemma3TextDefaults {
		if _, ok := text[k]; !ok {
			text[k], _ = json.Marshal(v)
		}
	}
	for _, k := range []string{"bos_token_id", "eos_token_id", "tie_word_embeddings", "quantization_config"} {
		if _, ok := text[k]; !ok {
			if v, ok := top[k]; ok {
				text[k] = v
			}
		}
	}
	text["model_type"] = json.RawMessage(`"gemma3_text"`)
	return json.Marshal(text)
}
