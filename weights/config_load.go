package weights

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Config file names in a Hugging Face model folder.
const (
	ConfigFileName           = "config.json"
	GenerationConfigFileName = "generation_config.json"
)

// Limits that keep products of sizes far from overflow.
const (
	maxModelSize = 1 << 24 // any one width or vocabulary size
	maxLayers    = 1 << 12
)

// configJSON is the subset of config.json that LoadConfig reads. Pointers tell
// a missing field from a zero one.
type configJSON struct {
	ModelType         string          `json:"model_type"`
	HiddenSize        *int            `json:"hidden_size"`
	IntermediateSize  *int            `json:"intermediate_size"`
	NumHiddenLayers   *int            `json:"num_hidden_layers"`
	NumAttentionHeads *int            `json:"num_attention_heads"`
	NumKeyValueHeads  *int            `json:"num_key_value_heads"`
	HeadDim           *int            `json:"head_dim"`
	VocabSize         *int            `json:"vocab_size"`
	MaxPosition       *int            `json:"max_position_embeddings"`
	RopeTheta         *float64        `json:"rope_theta"`
	RopeScaling       json.RawMessage `json:"rope_scaling"`
	RMSNormEps        *float64        `json:"rms_norm_eps"`
	TieWordEmbeddings *bool           `json:"tie_word_embeddings"`
	AttentionBias     *bool           `json:"attention_bias"`
	MLPBias           *bool           `json:"mlp_bias"`
	Quantization      json.RawMessage `json:"quantization_config"`
	HiddenAct         *string         `json:"hidden_act"`
	SlidingWindow     *int            `json:"sliding_window"`
	UseSlidingWindow  *bool           `json:"use_sliding_window"`
	gemmaJSON
	BOSTokenID json.RawMessage `json:"bos_token_id"`
	EOSTokenID json.RawMessage `json:"eos_token_id"`
}

// archDefaults are the Hugging Face defaults (LlamaConfig, MistralConfig,
// Qwen2Config) for fields a config.json may leave out.
type archDefaults struct {
	maxPos int
	rmsEps float64
}

var knownArchs = map[string]archDefaults{
	"llama":   {maxPos: 2048, rmsEps: 1e-6},
	"mistral": {maxPos: 4096 * 32, rmsEps: 1e-6},
	"qwen2":   {maxPos: 32768, rmsEps: 1e-6},
	"qwen3":   {maxPos: 32768, rmsEps: 1e-6},
	// Gemma3TextConfig's defaults
	"gemma3_text": {maxPos: 131072, rmsEps: 1e-6},
}

// LoadConfig reads dir/config.json (model_type llama, mistral, qwen2, qwen3 or gemma3_text) and, when
// present, dir/generation_config.json, whose bos_token_id replaces config.json's
// and whose eos_token_id(s) come first in EOS, followed by config.json's others.
//
// Defaults: num_key_value_heads = num_attention_heads, head_dim = hidden_size /
// num_attention_heads, rope_theta 10000, tie_word_embeddings false, and the
// Hugging Face class defaults for rms_norm_eps and max_position_embeddings.
// qwen2 always has q/k/v biases; the others when attention_bias is true. qwen3
// normalizes q and k per head (q_norm, k_norm).
// A sliding window (mistral, or qwen2 with use_sliding_window) caps MaxSeq at
// the window, so that full causal attention stays exact.
//
// An unknown model_type gives ErrUnknownArch; a rope_scaling other than llama3,
// mlp_bias or a quantization_config gives ErrUnsupported; missing or invalid
// sizes give ErrBadConfig.
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, ConfigFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	gpath := filepath.Join(dir, GenerationConfigFileName)
	if gb, err := os.ReadFile(gpath); err == nil {
		if err := mergeGenerationConfig(c, gb); err != nil {
			return nil, fmt.Errorf("%s: %w", gpath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// parseConfig turns config.json bytes into a Config (not yet validated).
func parseConfig(b []byte) (*Config, error) {
	var j configJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	if j.ModelType == "gemma3" { // multimodal Gemma 3: its language model
		text, err := gemma3TextConfig(b)
		if err != nil {
			return nil, err
		}
		return parseConfig(text)
	}
	defs, ok := knownArchs[j.ModelType]
	if !ok {
		return nil, fmt.Errorf("%w: model_type %q (want llama, mistral, qwen2, qwen3 or gemma3_text)", ErrUnknownArch, j.ModelType)
	}
	if j.HiddenAct != nil && *j.HiddenAct != "silu" && j.ModelType != "gemma3_text" {
		return nil, fmt.Errorf("%w: hidden_act %q (only silu)", ErrUnsupported, *j.HiddenAct)
	}
	if j.MLPBias != nil && *j.MLPBias {
		return nil, fmt.Errorf("%w: mlp_bias (MLP projections with biases)", ErrUnsupported)
	}
	if q := bytes.TrimSpace(j.Quantization); len(q) > 0 && string(q) != "null" {
		var qc struct {
			Method string `json:"quant_method"`
		}
		json.Unmarshal(q, &qc) // the method only names the scheme in the error
		return nil, fmt.Errorf("%w: quantization_config %q (quantized checkpoints; only F32, F16 and BF16 weights)",
			ErrUnsupported, qc.Method)
	}
	c := &Config{Arch: j.ModelType, RopeTheta: 10000, MaxSeq: defs.maxPos, RMSEps: defs.rmsEps, BOS: -1}
	required := []struct {
		name string
		src  *int
		dst  *int
	}{
		{"hidden_size", j.HiddenSize, &c.Dim},
		{"intermediate_size", j.IntermediateSize, &c.HiddenDim},
		{"num_hidden_layers", j.NumHiddenLayers, &c.NLayers},
		{"num_attention_heads", j.NumAttentionHeads, &c.NHeads},
		{"vocab_size", j.VocabSize, &c.Vocab},
	}
	for _, f := range required {
		if f.src == nil {
			return nil, fmt.Errorf("%w: %s is missing", ErrBadConfig, f.name)
		}
		*f.dst = *f.src
	}
	c.NKVHeads = c.NHeads
	if j.NumKeyValueHeads != nil {
		c.NKVHeads = *j.NumKeyValueHeads
	}
	if j.HeadDim != nil {
		c.HeadDim = *j.HeadDim
	} else if c.NHeads > 0 {
		c.HeadDim = c.Dim / c.NHeads
	}
	if j.MaxPosition != nil {
		c.MaxSeq = *j.MaxPosition
	}
	if j.RopeTheta != nil {
		c.RopeTheta = *j.RopeTheta
	}
	if j.RMSNormEps != nil {
		c.RMSEps = *j.RMSNormEps
	}
	if j.TieWordEmbeddings != nil {
		c.TieEmbed = *j.TieWordEmbeddings
	}
	c.AttnBias = j.ModelType == "qwen2" || (j.AttentionBias != nil && *j.AttentionBias)
	c.QKNorm = j.ModelType == "qwen3"
	if j.ModelType == "gemma3_text" {
		if err := parseGemma3(&j, c); err != nil {
			return nil, err
		}
	}
	sliding := j.ModelType == "mistral" || (j.UseSlidingWindow != nil && *j.UseSlidingWindow)
	if sliding && j.SlidingWindow != nil && *j.SlidingWindow > 0 && *j.SlidingWindow < c.MaxSeq {
		c.MaxSeq = *j.SlidingWindow
	}
	var err error
	if c.RopeScaling, err = parseRopeScaling(j.RopeScaling); err != nil {
		return nil, err
	}
	bos, err := parseTokenIDs("bos_token_id", j.BOSTokenID)
	if err != nil {
		return nil, err
	}
	if len(bos) > 1 {
		return nil, fmt.Errorf("%w: bos_token_id must be one id, got %v", ErrBadConfig, bos)
	}
	if len(bos) == 1 {
		c.BOS = bos[0]
	}
	if c.EOS, err = parseTokenIDs("eos_token_id", j.EOSTokenID); err != nil {
		return nil, err
	}
	return c, nil
}

// parseRopeScaling reads rope_scaling: null, {"rope_type": "default"} (no
// scaling), linear or llama3; anything else is ErrUnsupported.
func parseRopeScaling(raw json.RawMessage) (*RopeScaling, error) {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var j struct {
		RopeType       string   `json:"rope_type"`
		Type           string   `json:"type"`
		Factor         *float64 `json:"factor"`
		LowFreqFactor  *float64 `json:"low_freq_factor"`
		HighFreqFactor *float64 `json:"high_freq_factor"`
		OriginalMaxPos *int     `json:"original_max_position_embeddings"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("%w: rope_scaling: %v", ErrBadConfig, err)
	}
	kind := j.RopeType
	if kind == "" {
		kind = j.Type
	}
	switch kind {
	case "default":
		return nil, nil
	case "linear":
		if j.Factor == nil {
			return nil, fmt.Errorf("%w: linear rope_scaling needs a factor", ErrBadConfig)
		}
		return &RopeScaling{Linear: true, Factor: *j.Factor}, nil
	case "llama3":
	default:
		return nil, fmt.Errorf("%w: rope_scaling type %q (linear and llama3 are supported)", ErrUnsupported, kind)
	}
	if j.Factor == nil || j.LowFreqFactor == nil || j.HighFreqFactor == nil || j.OriginalMaxPos == nil {
		return nil, fmt.Errorf("%w: llama3 rope_scaling needs factor, low_freq_factor, high_freq_factor and original_max_position_embeddings", ErrBadConfig)
	}
	return &RopeScaling{
		Factor:         *j.Factor,
		LowFreqFactor:  *j.LowFreqFactor,
		HighFreqFactor: *j.HighFreqFactor,
		OriginalMaxPos: *j.OriginalMaxPos,
	}, nil
}

// parseTokenIDs reads a token id field that may be absent, null, an int or a
// list of ints.
func parseTokenIDs(field string, raw json.RawMessage) ([]int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("%w: %s must be an id or a list of ids: %s", ErrBadConfig, field, raw)
	}
	return many, nil
}

// mergeGenerationConfig applies generation_config.json's bos/eos ids to c.
func mergeGenerationConfig(c *Config, b []byte) error {
	var j struct {
		BOSTokenID json.RawMessage `json:"bos_token_id"`
		EOSTokenID json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	bos, err := parseTokenIDs("bos_token_id", j.BOSTokenID)
	if err != nil {
		return err
	}
	if len(bos) > 1 {
		return fmt.Errorf("%w: bos_token_id must be one id, got %v", ErrBadConfig, bos)
	}
	if len(bos) == 1 {
		c.BOS = bos[0]
	}
	eos, err := parseTokenIDs("eos_token_id", j.EOSTokenID)
	if err != nil {
		return err
	}
	c.EOS = mergeIDs(eos, c.EOS)
	return nil
}

// mergeIDs is a followed by the ids of b not already in it.
func mergeIDs(a, b []int) []int {
	out := append([]int(nil), a...)
	for _, id := range b {
		dup := false
		for _, x := range out {
			dup = dup || x == id
		}
		if !dup {
			out = append(out, id)
		}
	}
	return out
}

// Validate checks that the sizes are positive and consistent: heads divisible
// by kv heads, an even head_dim, positive rope_theta and rms_norm_eps, sane
// llama3 scaling, and token ids inside the vocabulary. It returns an error
// wrapping ErrBadConfig (or ErrUnknownArch for an unknown Arch).
func (c *Config) Validate() error {
	if c == nil {
		return fmt.Errorf("%w: nil config", ErrBadConfig)
	}
	if _, ok := knownArchs[c.Arch]; !ok {
		return fmt.Errorf("%w: model_type %q (want llama, mistral, qwen2, qwen3 or gemma3_text)", ErrUnknownArch, c.Arch)
	}
	sizes := []struct {
		name string
		v    int
		max  int
	}{
		{"hidden_size", c.Dim, maxModelSize},
		{"intermediate_size", c.HiddenDim, maxModelSize},
		{"num_hidden_layers", c.NLayers, maxLayers},
		{"num_attention_heads", c.NHeads, maxModelSize},
		{"num_key_value_heads", c.NKVHeads, maxModelSize},
		{"head_dim", c.HeadDim, maxModelSize},
		{"vocab_size", c.Vocab, maxModelSize},
		{"max_position_embeddings", c.MaxSeq, maxModelSize},
	}
	for _, s := range sizes {
		if s.v <= 0 || s.v > s.max {
			return fmt.Errorf("%w: %s = %d, want 1..%d", ErrBadConfig, s.name, s.v, s.max)
		}
	}
	if c.NHeads%c.NKVHeads != 0 {
		return fmt.Errorf("%w: num_attention_heads %d is not a multiple of num_key_value_heads %d", ErrBadConfig, c.NHeads, c.NKVHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("%w: head_dim %d is odd (RoPE rotates pairs)", ErrBadConfig, c.HeadDim)
	}
	if c.NHeads*c.HeadDim > maxModelSize {
		return fmt.Errorf("%w: num_attention_heads*head_dim = %d is too large", ErrBadConfig, c.NHeads*c.HeadDim)
	}
	if !(c.RopeTheta > 0) || !(c.RopeTheta < 1e30) {
		return fmt.Errorf("%w: rope_theta %v must be positive", ErrBadConfig, c.RopeTheta)
	}
	if !(c.RMSEps > 0) || !(c.RMSEps < 1) {
		return fmt.Errorf("%w: rms_norm_eps %v must be in (0, 1)", ErrBadConfig, c.RMSEps)
	}
	if s := c.RopeScaling; s != nil && s.Linear {
		if !(s.Factor >= 1) || !(s.Factor <= 1e6) {
			return fmt.Errorf("%w: linear rope_scaling factor %v: want 1 to 1e6", ErrBadConfig, s.Factor)
		}
	} else if s != nil {
		if !(s.Factor >= 1) || !(s.LowFreqFactor > 0) || !(s.HighFreqFactor > s.LowFreqFactor) || s.OriginalMaxPos <= 0 {
			return fmt.Errorf("%w: llama3 rope_scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0, got %+v", ErrBadConfig, *s)
		}
	}
	if err := c.validateGemma(); err != nil {
		return err
	}
	if c.BOS < -1 || c.BOS >= c.Vocab {
		return fmt.Errorf("%w: bos_token_id %d outside the vocabulary of %d", ErrBadConfig, c.BOS, c.Vocab)
	}
	for _, id := range c.EOS {
		if id < 0 || id >= c.Vocab {
			return fmt.Errorf("%w: eos_token_id %d outside the vocabulary of %d", ErrBadConfig, id, c.Vocab)
		}
	}
	return nil
}
