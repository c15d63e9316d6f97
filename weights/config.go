// Package weights reads model checkpoints (safetensors, Hugging Face config.json,
// tokenizer.json) and converts other layouts into them. It imports nothing of wspec's.
package weights

// Config is the architecture of a Llama-family decoder, read from a Hugging Face
// config.json (model_type llama, mistral, qwen2, qwen3 or gemma3_text).
type Config struct {
	Arch        string  // model_type: "llama", "mistral", "qwen2", "qwen3", "gemma3_text"
	Dim         int     // hidden_size
	HiddenDim   int     // intermediate_size (SwiGLU width)
	NLayers     int     // num_hidden_layers
	NHeads      int     // num_attention_heads
	NKVHeads    int     // num_key_value_heads (== NHeads without grouped-query attention)
	HeadDim     int     // head_dim, or Dim / NHeads
	Vocab       int     // vocab_size
	MaxSeq      int     // max_position_embeddings
	RopeTheta   float64 // rope_theta (10000 when absent)
	RopeScaling *RopeScaling
	RMSEps      float64 // rms_norm_eps
	TieEmbed    bool    // tie_word_embeddings: the LM head is the token embedding
	AttnBias    bool    // q/k/v projections carry biases (qwen2, or attention_bias: true)
	QKNorm      bool    // q and k are RMS-normalized per head before RoPE (qwen3: q_norm, k_norm)

	// Gemma 3's differences (all zero for the others):
	NormPlusOne    bool    // RMSNorm multiplies by 1 + w (the stored weight is w)
	EmbedScale     float64 // the embedding is multiplied by this (sqrt(hidden)); 0: 1
	GeluTanh       bool    // the MLP's gate is GELU (tanh approximation), not SiLU
	PostNorms      bool    // RMSNorm on the attention and MLP outputs before the residual adds
	AttnScale      float64 // scores are multiplied by this (query_pre_attn_scalar^-0.5); 0: 1/sqrt(head_dim)
	SlidingWindow  int     // the tokens a sliding layer attends to, itself included (0: none)
	SlidingLayers  []bool  // per layer: a sliding-window layer, whose rope base is RopeLocalTheta
	RopeLocalTheta float64
	BOS            int   // bos_token_id (-1 when absent)
	EOS            []int // eos_token_id(s), from config.json and generation_config.json
}

// RopeScaling is rope_scaling: Llama-3's frequency scaling (rope_type "llama3"), or with
// Linear every frequency divided by Factor (rope_type "linear": positions compressed by
// Factor, as Gemma 3 4B and larger do in their global layers and older long-context Llama
// fine-tunes do everywhere), where the other fields are unused.
type RopeScaling struct {
	Linear         bool
	Factor         float64 // factor
	LowFreqFactor  float64 // low_freq_factor
	HighFreqFactor float64 // high_freq_factor
	OriginalMaxPos int     // original_max_position_embeddings
}
