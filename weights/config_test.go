package weights

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeConfigDir(t *testing.T, config, generation string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(config), 0o644)
	if generation != "" {
		os.WriteFile(filepath.Join(dir, GenerationConfigFileName), []byte(generation), 0o644)
	}
	return dir
}

func TestLoadConfigLlama(t *testing.T) {
	// Llama-3.2-1B's config.json.
	dir := writeConfigDir(t, `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 128256}`,
		`{"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}`)
	c, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{Arch: "llama", Dim: 2048, HiddenDim: 8192, NLayers: 16, NHeads: 32, NKVHeads: 8, HeadDim: 64,
		Vocab: 128256, MaxSeq: 131072, RopeTheta: 500000,
		RopeScaling: &RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192},
		RMSEps:      1e-5, TieEmbed: true, BOS: 128000, EOS: []int{128001, 128008, 128009}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
}

func TestLoadConfigDefaultsAndKinds(t *testing.T) {
	// Llama-2 style: no kv heads, no head_dim, no rope_theta, old "type" key.
	c, err := LoadConfig(writeConfigDir(t, `{"model_type":"llama","hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"rms_norm_eps":1e-5,
		"bos_token_id":1,"eos_token_id":2,"rope_scaling":null}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if c.NKVHeads != 4 || c.HeadDim != 16 || c.RopeTheta != 10000 || c.TieEmbed || c.AttnBias || c.MaxSeq != 2048 ||
		c.RopeScaling != nil || c.BOS != 1 || !reflect.DeepEqual(c.EOS, []int{2}) {
		t.Fatalf("llama defaults: %+v", c)
	}
	// attention_bias on llama, and a llama3 scaling spelled with "type".
	c, err = LoadConfig(writeConfigDir(t, `{"model_type":"llama","hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"attention_bias":true,
		"rope_scaling":{"type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}}`, ""))
	if err != nil || !c.AttnBias || c.RopeScaling == nil || c.RopeScaling.Factor != 8 || c.BOS != -1 || c.EOS != nil {
		t.Fatalf("llama with bias: %+v %v", c, err)
	}
	// Linear scaling (a long-context fine-tune's), and its round trip.
	c, err = LoadConfig(writeConfigDir(t, `{"model_type":"llama","hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"rope_scaling":{"type":"linear","factor":4.0}}`, ""))
	if err != nil || c.RopeScaling == nil || *c.RopeScaling != (RopeScaling{Linear: true, Factor: 4}) {
		t.Fatalf("linear: %+v %v", c, err)
	}
	dir := t.TempDir()
	if err := WriteConfig(dir, c); err != nil {
		t.Fatal(err)
	}
	if back, err := LoadConfig(dir); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("linear round trip:\n%+v\n%+v (%v)", back, c, err)
	}
	// Mistral-7B-v0.1: sliding window caps MaxSeq.
	c, err = LoadConfig(writeConfigDir(t, `{"architectures":["MistralForCausalLM"],"bos_token_id":1,"eos_token_id":2,
		"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,"intermediate_size":14336,
		"max_position_embeddings":32768,"model_type":"mistral","num_attention_heads":32,"num_hidden_layers":32,
		"num_key_value_heads":8,"rms_norm_eps":1e-05,"rope_theta":10000.0,"sliding_window":4096,
		"tie_word_embeddings":false,"vocab_size":32000}`, ""))
	if err != nil || c.MaxSeq != 4096 || c.NKVHeads != 8 || c.HeadDim != 128 || c.AttnBias {
		t.Fatalf("mistral: %+v %v", c, err)
	}
	// Qwen2-0.5B: biases always, tied embeddings, sliding window unused, EOS merged.
	c, err = LoadConfig(writeConfigDir(t, `{"architectures":["Qwen2ForCausalLM"],"attention_dropout":0.0,
		"bos_token_id":151643,"eos_token_id":151643,"hidden_act":"silu","hidden_size":896,
		"intermediate_size":4864,"max_position_embeddings":32768,"max_window_layers":24,"model_type":"qwen2",
		"num_attention_heads":14,"num_hidden_layers":24,"num_key_value_heads":2,"rms_norm_eps":1e-06,
		"rope_theta":1000000.0,"sliding_window":32768,"tie_word_embeddings":true,"torch_dtype":"bfloat16",
		"use_cache":true,"use_sliding_window":false,"vocab_size":151936}`,
		`{"bos_token_id":151643,"eos_token_id":[151645,151643],"do_sample":true}`))
	if err != nil || !c.AttnBias || !c.TieEmbed || c.HeadDim != 64 || c.NKVHeads != 2 || c.MaxSeq != 32768 ||
		c.RMSEps != 1e-6 || !reflect.DeepEqual(c.EOS, []int{151645, 151643}) {
		t.Fatalf("qwen2: %+v %v", c, err)
	}
	// Qwen3-0.6B (its config.json): q/k norms, no biases, head_dim 128 over hidden 1024 / 16 heads.
	c, err = LoadConfig(writeConfigDir(t, `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,
		"attention_dropout":0.0,"bos_token_id":151643,"eos_token_id":151645,"head_dim":128,"hidden_act":"silu",
		"hidden_size":1024,"initializer_range":0.02,"intermediate_size":3072,"max_position_embeddings":40960,
		"max_window_layers":28,"model_type":"qwen3","num_attention_heads":16,"num_hidden_layers":28,
		"num_key_value_heads":8,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,
		"sliding_window":null,"tie_word_embeddings":true,"torch_dtype":"bfloat16","use_cache":true,
		"use_sliding_window":false,"vocab_size":151936}`, ""))
	if err != nil || c.AttnBias || !c.QKNorm || c.HeadDim != 128 || c.NHeads*c.HeadDim != 2048 || c.MaxSeq != 40960 || !c.TieEmbed {
		t.Fatalf("qwen3: %+v %v", c, err)
	}
	names := map[string]bool{}
	for _, sp := range c.ExpectedTensors() {
		names[sp.Name] = true
	}
	if !names[LayerTensorName(27, QNormSuffix)] || !names[LayerTensorName(0, KNormSuffix)] || names[LayerTensorName(0, BqSuffix)] {
		t.Fatalf("qwen3 tensors: q_norm/k_norm expected, no biases")
	}
}

func TestLoadConfigErrors(t *testing.T) {
	base := `"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100`
	cases := []struct {
		name, config, generation string
		want                     error
		mention                  string
	}{
		{"unknown arch", `{"model_type":"gpt2",` + base + `}`, "", ErrUnknownArch, "gpt2"},
		{"no arch", `{` + base + `}`, "", ErrUnknownArch, ""},
		{"yarn", `{"model_type":"llama",` + base + `,"rope_scaling":{"rope_type":"yarn","factor":4}}`, "", ErrUnsupported, "yarn"},
		{"linear without factor", `{"model_type":"llama",` + base + `,"rope_scaling":{"type":"linear"}}`, "", ErrBadConfig, "factor"},
		{"linear factor below 1", `{"model_type":"llama",` + base + `,"rope_scaling":{"rope_type":"linear","factor":0.5}}`, "", ErrBadConfig, "factor"},
		{"llama3 incomplete", `{"model_type":"llama",` + base + `,"rope_scaling":{"rope_type":"llama3","factor":8}}`, "", ErrBadConfig, ""},
		{"gelu", `{"model_type":"llama",` + base + `,"hidden_act":"gelu"}`, "", ErrUnsupported, "gelu"},
		{"missing size", `{"model_type":"llama","hidden_size":64}`, "", ErrBadConfig, "intermediate_size"},
		{"zero layers", `{"model_type":"llama",` + base + `,"num_hidden_layers":0}`, "", ErrBadConfig, "num_hidden_layers"},
		{"kv heads", `{"model_type":"llama",` + base + `,"num_key_value_heads":3}`, "", ErrBadConfig, "num_key_value_heads"},
		{"odd head dim", `{"model_type":"llama",` + base + `,"head_dim":15}`, "", ErrBadConfig, "head_dim"},
		{"negative eps", `{"model_type":"llama",` + base + `,"rms_norm_eps":-1}`, "", ErrBadConfig, "rms_norm_eps"},
		{"eos out of vocab", `{"model_type":"llama",` + base + `,"eos_token_id":[2,100]}`, "", ErrBadConfig, "eos_token_id"},
		{"eos a string", `{"model_type":"llama",` + base + `,"eos_token_id":"</s>"}`, "", ErrBadConfig, "eos_token_id"},
		{"bad JSON", `{"model_type":`, "", ErrBadConfig, ""},
		// Checkpoints whose tensors this engine would misread: refused where the
		// config says so, before any tensor is opened.
		{"mlp bias", `{"model_type":"llama",` + base + `,"mlp_bias":true}`, "", ErrUnsupported, "mlp_bias"},
		{"quantized", `{"model_type":"llama",` + base + `,"quantization_config":{"quant_method":"gptq","bits":4}}`, "", ErrUnsupported, "gptq"},
		{"quantized, no method", `{"model_type":"qwen2",` + base + `,"quantization_config":{}}`, "", ErrUnsupported, "quantization_config"},
		// Hugging Face refuses a llama3 factor below 1 (it would raise the frequencies).
		{"llama3 factor below 1", `{"model_type":"llama",` + base + `,"rope_scaling":{"rope_type":"llama3","factor":0.5,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":64}}`, "", ErrBadConfig, "factor"},
		{"bad generation config", `{"model_type":"llama",` + base + `}`, `{"eos_token_id":{}}`, ErrBadConfig, "eos_token_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfigDir(t, c.config, c.generation))
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("got %v, want %v mentioning %q", err, c.want, c.mention)
			}
		})
	}
	if _, err := LoadConfig(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no config.json: %v", err)
	}
}

func TestWriteConfigRoundTrip(t *testing.T) {
	for _, c := range []*Config{
		{Arch: "llama", Dim: 288, HiddenDim: 768, NLayers: 6, NHeads: 6, NKVHeads: 6, HeadDim: 48, Vocab: 32000,
			MaxSeq: 256, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true, BOS: 1, EOS: []int{1, 2}},
		{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 1, NHeads: 8, NKVHeads: 2, HeadDim: 16, Vocab: 50, MaxSeq: 64,
			RopeTheta: 5e5, RopeScaling: &RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 32},
			RMSEps: 1e-6, AttnBias: true, BOS: -1, EOS: []int{3}},
		{Arch: "qwen2", Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 8, Vocab: 40, MaxSeq: 128,
			RopeTheta: 1e6, RMSEps: 1e-6, TieEmbed: true, AttnBias: true, BOS: 0, EOS: []int{1, 2}},
		{Arch: "mistral", Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 1, HeadDim: 8, Vocab: 40, MaxSeq: 128,
			RopeTheta: 1e4, RMSEps: 1e-5, BOS: 1, EOS: []int{2}},
	} {
		dir := t.TempDir()
		if err := WriteConfig(dir, c); err != nil {
			t.Fatal(err)
		}
		got, err := LoadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip:\ngot  %+v\nwant %+v", got, c)
		}
	}
	if err := WriteConfig(t.TempDir(), &Config{Arch: "llama"}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("invalid config written: %v", err)
	}
}

// randomCheckpoint writes a checkpoint with every tensor cfg needs.
func randomCheckpoint(t *testing.T, cfg *Config, skip string, reshape string) *Checkpoint {
	t.Helper()
	var ts []Tensor
	for i, spec := range cfg.ExpectedTensors() {
		if spec.Name == skip {
			continue
		}
		shape := spec.Shape
		if spec.Name == reshape {
			shape = append([]int{1}, shape...)
		}
		n, _ := numElements(shape)
		ts = append(ts, BF16Tensor(spec.Name, shape, randomFloats(n, uint32(i+1))))
	}
	dir := t.TempDir()
	if err := WriteSafeTensors(filepath.Join(dir, SingleFileName), ts, nil); err != nil {
		t.Fatal(err)
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

func TestCheckTensors(t *testing.T) {
	cfg := &Config{Arch: "qwen2", Dim: 16, HiddenDim: 24, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 8, Vocab: 10,
		MaxSeq: 32, RopeTheta: 1e6, RMSEps: 1e-6, AttnBias: true, BOS: -1}
	if err := cfg.CheckTensors(randomCheckpoint(t, cfg, "", "")); err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.ExpectedTensors()); n != 1+2*12+1+1 {
		t.Fatalf("%d tensors expected", n)
	}
	missing := LayerTensorName(1, BkSuffix)
	if err := cfg.CheckTensors(randomCheckpoint(t, cfg, missing, "")); !errors.Is(err, ErrMissingTensor) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing bias: %v", err)
	}
	if err := cfg.CheckTensors(randomCheckpoint(t, cfg, LMHeadTensorName, "")); !errors.Is(err, ErrMissingTensor) {
		t.Fatalf("missing lm_head: %v", err)
	}
	wrong := LayerTensorName(0, DownSuffix)
	if err := cfg.CheckTensors(randomCheckpoint(t, cfg, "", wrong)); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), wrong) {
		t.Fatalf("wrong shape: %v", err)
	}
	tied := *cfg
	tied.TieEmbed = true
	if err := tied.CheckTensors(randomCheckpoint(t, &tied, LMHeadTensorName, "")); err != nil {
		t.Fatalf("tied: %v", err)
	}
	if LayerTensorName(3, WqSuffix) != "model.layers.3.self_attn.q_proj.weight" {
		t.Fatal(LayerTensorName(3, WqSuffix))
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100}`))
	f.Add([]byte(`{"model_type":"qwen2","hidden_size":896,"intermediate_size":4864,"num_hidden_layers":24,"num_attention_heads":14,"num_key_value_heads":2,"vocab_size":151936,"eos_token_id":[1,2],"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b)
		if err != nil {
			return
		}
		if c.Validate() == nil {
			c.ExpectedTensors()
		}
	})
}

// Gemma-3-1B's config.json (gemma3_text): its differences from Llama, and a round trip.
func TestLoadConfigGemma3(t *testing.T) {
	c, err := LoadConfig(writeConfigDir(t, `{"architectures":["Gemma3ForCausalLM"],"attention_bias":false,
		"attention_dropout":0.0,"attn_logit_softcapping":null,"bos_token_id":2,"cache_implementation":"hybrid",
		"eos_token_id":[1,106],"final_logit_softcapping":null,"head_dim":256,"hidden_activation":"gelu_pytorch_tanh",
		"hidden_size":1152,"initializer_range":0.02,"intermediate_size":6912,"max_position_embeddings":32768,
		"model_type":"gemma3_text","num_attention_heads":4,"num_hidden_layers":26,"num_key_value_heads":1,
		"pad_token_id":0,"query_pre_attn_scalar":256,"rms_norm_eps":1e-06,"rope_local_base_freq":10000,
		"rope_scaling":null,"rope_theta":1000000,"sliding_window":512,"sliding_window_pattern":6,
		"torch_dtype":"bfloat16","use_cache":true,"vocab_size":262144}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !c.NormPlusOne || !c.GeluTanh || !c.PostNorms || !c.QKNorm || c.AttnBias || c.HeadDim != 256 || !c.TieEmbed ||
		c.EmbedScale != math.Sqrt(1152) || c.AttnScale != 1.0/16 || c.SlidingWindow != 512 || c.RopeLocalTheta != 10000 {
		t.Fatalf("gemma3: %+v", c)
	}
	for l := range 26 {
		if want := (l+1)%6 != 0; c.Sliding(l) != want {
			t.Fatalf("layer %d sliding %v", l, c.Sliding(l))
		}
	}
	if c.LayerRopeTheta(0) != 10000 || c.LayerRopeTheta(5) != 1e6 || c.FFNNormSuffix() != PreFFNNormSuffix {
		t.Fatalf("layer rope bases %v %v, ffn norm %s", c.LayerRopeTheta(0), c.LayerRopeTheta(5), c.FFNNormSuffix())
	}
	dir := t.TempDir()
	if err := WriteConfig(dir, c); err != nil {
		t.Fatal(err)
	}
	back, err := LoadConfig(dir)
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip:\n%+v\n%+v (%v)", back, c, err)
	}
	// Gemma-3-4B's text model: linear scaling of the global layers' rope (the sliding ones keep
	// their own base, unscaled).
	c, err = LoadConfig(writeConfigDir(t, `{"model_type":"gemma3_text","hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":6,"num_attention_heads":4,"vocab_size":100,"rope_scaling":{"rope_type":"linear","factor":8.0}}`, ""))
	if err != nil || c.RopeScaling == nil || *c.RopeScaling != (RopeScaling{Linear: true, Factor: 8}) {
		t.Fatalf("gemma3 with linear rope scaling: %+v %v", c, err)
	}
	for _, bad := range []string{`"hidden_activation":"gelu"`, `"final_logit_softcapping":30.0`, `"rope_scaling":{"rope_type":"yarn","factor":8.0}`,
		`"layer_types":["full_attention"]`} {
		if _, err := LoadConfig(writeConfigDir(t, `{"model_type":"gemma3_text","hidden_size":64,"intermediate_size":128,
			"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,`+bad+`}`, "")); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
