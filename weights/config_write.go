package weights

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// hfArchitectures is the "architectures" entry transformers expects per model_type.
var hfArchitectures = map[string]string{
	"llama":   "LlamaForCausalLM",
	"mistral": "MistralForCausalLM",
	"qwen2":   "Qwen2ForCausalLM",
	"qwen3":   "Qwen3ForCausalLM",
	// Gemma 3's text model
	"gemma3_text": "Gemma3ForCausalLM",
}

// WriteConfig validates c and writes dir/config.json and
// dir/generation_config.json (bos c.BOS, eos c.EOS) so that LoadConfig(dir)
// gives c back. Mistral's sliding window is written as null (MaxSeq already
// bounds the context).
func WriteConfig(dir string, c *Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	j := map[string]any{
		"architectures":           []string{hfArchitectures[c.Arch]},
		"model_type":              c.Arch,
		"hidden_size":             c.Dim,
		"intermediate_size":       c.HiddenDim,
		"num_hidden_layers":       c.NLayers,
		"num_attention_heads":     c.NHeads,
		"num_key_value_heads":     c.NKVHeads,
		"head_dim":                c.HeadDim,
		"vocab_size":              c.Vocab,
		"max_position_embeddings": c.MaxSeq,
		"rope_theta":              c.RopeTheta,
		"rms_norm_eps":            c.RMSEps,
		"tie_word_embeddings":     c.TieEmbed,
		"hidden_act":              "silu",
		"rope_scaling":            nil,
	}
	if c.Arch != "qwen2" {
		j["attention_bias"] = c.AttnBias
	} else if !c.AttnBias {
		return fmt.Errorf("%w: qwen2 always has attention biases", ErrBadConfig)
	}
	if c.Arch == "mistral" {
		j["sliding_window"] = nil
	}
	if c.Arch == "gemma3_text" {
		delete(j, "hidden_act")
		j["hidden_activation"] = "gelu_pytorch_tanh"
		j["query_pre_attn_scalar"] = 1 / (c.AttnScale * c.AttnScale)
		j["sliding_window"] = c.SlidingWindow
		j["rope_local_base_freq"] = c.RopeLocalTheta
		types := make([]string, c.NLayers)
		for i := range types {
			types[i] = "full_attention"
			if c.Sliding(i) {
				types[i] = "sliding_attention"
			}
		}
		j["layer_types"] = types
	}
	if s := c.RopeScaling; s != nil && s.Linear {
		j["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": s.Factor}
	} else if s != nil {
		j["rope_scaling"] = map[string]any{
			"rope_type":                        "llama3",
			"factor":                           s.Factor,
			"low_freq_factor":                  s.LowFreqFactor,
			"high_freq_factor":                 s.HighFreqFactor,
			"original_max_position_embeddings": s.OriginalMaxPos,
		}
	}
	if c.BOS >= 0 {
		j["bos_token_id"] = c.BOS
	}
	if ids := tokenIDsJSON(c.EOS); ids != nil {
		j["eos_token_id"] = ids
	}
	if err := writeJSONFile(filepath.Join(dir, ConfigFileName), j); err != nil {
		return err
	}
	return WriteGenerationConfig(dir, c.BOS, c.EOS)
}

// WriteGenerationConfig writes dir/generation_config.json with the given bos
// id (left out when negative) and eos ids (a single id is written as a number).
func WriteGenerationConfig(dir string, bos int, eos []int) error {
	j := map[string]any{}
	if bos >= 0 {
		j["bos_token_id"] = bos
	}
	if ids := tokenIDsJSON(eos); ids != nil {
		j["eos_token_id"] = ids
	}
	return writeJSONFile(filepath.Join(dir, GenerationConfigFileName), j)
}

func tokenIDsJSON(ids []int) any {
	switch len(ids) {
	case 0:
		return nil
	case 1:
		return ids[0]
	default:
		return ids
	}
}

// writeJSONFile writes v as indented JSON.
// editConfig rewrites the config.json in dir as edit changes its fields.
func editConfig(dir string, edit func(j map[string]any)) error {
	path := filepath.Join(dir, ConfigFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%s: %w: %v", path, ErrBadConfig, err)
	}
	edit(j)
	return writeJSONFile(path, j)
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
