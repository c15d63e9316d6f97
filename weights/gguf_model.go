package weights

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/wspec/wspec/weights/gguf"
)

// A GGUF file as a model: its metadata read into the Config the Hugging Face loader fills, and
// its tensors served under Hugging Face names, undoing what llama.cpp's converter did (llama's q
// and k rows permuted for its rope, Gemma's norms stored as 1 + w, llama3 rope scaling as a
// rope_freqs tensor). Tensors of F32, F16 and BF16; quantized types are refused by name.

// ggufArchs maps GGUF architectures to model_type.
var ggufArchs = map[string]string{"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gemma3": "gemma3_text"}

// ggufMeta reads typed metadata values, keeping the first error.
type ggufMeta struct {
	f   *gguf.File
	err error
}

// uint is an integer value (any of GGUF's integer types), def when absent.
func (m *ggufMeta) uint(key string, def int) int {
	v, ok := m.f.Get(key)
	if !ok {
		return def
	}
	var n int64
	switch x := v.(type) {
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	case uint64:
		n = int64(min(x, math.MaxInt32))
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	default:
		m.fail("%s is a %T, not an integer", key, v)
		return def
	}
	if n < 0 || n > maxModelSize {
		m.fail("%s = %d is out of range", key, n)
		return def
	}
	return int(n)
}

// float is a float value (float32 or float64), def when absent.
func (m *ggufMeta) float(key string, def float64) float64 {
	v, ok := m.f.Get(key)
	if !ok {
		return def
	}
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	m.fail("%s is a %T, not a float", key, v)
	return def
}

func (m *ggufMeta) str(key string) string {
	v, _ := m.f.Get(key)
	s, _ := v.(string)
	return s
}

func (m *ggufMeta) fail(format string, args ...any) {
	if m.err == nil {
		m.err = fmt.Errorf("%w: gguf metadata: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
}

// ggufConfig reads the model's configuration from a GGUF file's metadata and tensor list.
func ggufConfig(f *gguf.File) (*Config, error) {
	m := &ggufMeta{f: f}
	garch := m.str("general.architecture")
	arch, ok := ggufArchs[garch]
	if !ok {
		return nil, fmt.Errorf("%w: GGUF architecture %q (want llama, qwen2, qwen3 or gemma3)", ErrUnknownArch, garch)
	}
	k := func(s string) string { return garch + "." + s }
	c := &Config{Arch: arch, BOS: -1}
	c.Dim = m.uint(k("embedding_length"), 0)
	c.HiddenDim = m.uint(k("feed_forward_length"), 0)
	c.NLayers = m.uint(k("block_count"), 0)
	c.NHeads = m.uint(k("attention.head_count"), 0)
	c.NKVHeads = m.uint(k("attention.head_count_kv"), c.NHeads)
	if c.NHeads > 0 {
		c.HeadDim = m.uint(k("attention.key_length"), c.Dim/c.NHeads)
	}
	c.MaxSeq = m.uint(k("context_length"), 2048)
	c.RopeTheta = m.float(k("rope.freq_base"), 10000)
	c.RMSEps = m.float(k("attention.layer_norm_rms_epsilon"), 1e-5)
	if m.err != nil {
		return nil, m.err
	}
	switch s := m.str(k("rope.scaling.type")); s {
	case "", "none":
	case "linear": // a factor of 0 is none, as llama.cpp reads it
		if f := m.float(k("rope.scaling.factor"), 0); f != 0 {
			c.RopeScaling = &RopeScaling{Linear: true, Factor: f}
		}
		if m.err != nil {
			return nil, m.err
		}
	default:
		return nil, fmt.Errorf("%w: GGUF rope scaling %q (none or linear; llama3's is the rope_freqs tensor)", ErrUnsupported, s)
	}
	embd, _, ok := f.Tensor("token_embd.weight")
	if !ok || len(embd.Dims) != 2 {
		return nil, fmt.Errorf("%w: token_embd.weight", ErrMissingTensor)
	}
	c.Vocab = int(min(embd.Dims[1], maxModelSize+1))
	_, _, hasOutput := f.Tensor("output.weight")
	c.TieEmbed = !hasOutput
	_, _, c.AttnBias = f.Tensor("blk.0.attn_q.bias")
	_, _, c.QKNorm = f.Tensor("blk.0.attn_q_norm.weight")
	if arch == "gemma3_text" {
		ggufGemma(m, c, k)
	}
	if info, b, ok := f.Tensor("rope_freqs.weight"); ok {
		factors, err := ggufFloats(info, b)
		if err != nil {
			return nil, err
		}
		if c.RopeScaling, err = llama3FromFactors(c, factors); err != nil {
			return nil, err
		}
	}
	if _, ok := f.Get("tokenizer.ggml.bos_token_id"); ok {
		c.BOS = m.uint("tokenizer.ggml.bos_token_id", 0)
	}
	for _, key := range []string{"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		if _, ok := f.Get(key); ok {
			c.EOS = mergeIDs(c.EOS, []int{m.uint(key, 0)})
		}
	}
	// the tokenizer's errors are reported where it is read (ggufTokenizer)
	if tokens, err := ggufArray[string](f, "tokenizer.ggml.tokens", c.Vocab); err == nil {
		c.EOS = mergeIDs(c.EOS, endOfGeneration(tokens))
	}
	if m.err != nil {
		return nil, m.err
	}
	return c, c.Validate()
}

// ggufGemma fills Gemma 3's fields as llama.cpp computes them: every sixth layer global, the
// attention scaled by 1/sqrt(head_dim), the embedding by sqrt(hidden).
func ggufGemma(m *ggufMeta, c *Config, k func(string) string) {
	c.NormPlusOne, c.GeluTanh, c.PostNorms = true, true, true
	c.EmbedScale = math.Sqrt(float64(c.Dim))
	if c.HeadDim > 0 {
		c.AttnScale = 1 / math.Sqrt(float64(c.HeadDim))
	}
	c.SlidingWindow = m.uint(k("attention.sliding_window"), 0)
	if c.SlidingWindow > 0 && c.NLayers > 0 && c.NLayers <= maxLayers {
		c.RopeLocalTheta = m.float(k("rope.freq_base_swa"), 10000)
		c.SlidingLayers = make([]bool, c.NLayers)
		for i := range c.SlidingLayers {
			c.SlidingLayers[i] = (i+1)%6 != 0
		}
	}
}

// llama3FromFactors recovers llama3 rope scaling from llama.cpp's per-frequency divisors f. The
// factor is the largest divisor. Between the high- and low-frequency bounds the blend s is
// linear in 1/wavelength (s = (1/w - 1/L) / (1/H - 1/L) for the bounds' wavelengths H < L), so
// two blended frequencies fix the bounds; with fewer, any bounds that keep each frequency on
// its side give the same divisors, and the midpoints are taken. The context is set to 8192
// (low_freq_factor = 8192/L, high_freq_factor = 8192/H: only the ratios matter). The recovered
// parameters must give the divisors back, else the file's scaling is not llama3's.
func llama3FromFactors(c *Config, f []float32) (*RopeScaling, error) {
	hd := c.HeadDim
	if len(f) != hd/2 {
		return nil, fmt.Errorf("%w: rope_freqs has %d values for heads of %d", ErrShape, len(f), hd)
	}
	factor := 1.0
	for _, v := range f {
		factor = max(factor, float64(v))
	}
	const orig = 8192
	var bx, by []float64                // blended frequencies: 1/wavelength and s
	maxFull, minOne := 0.0, math.Inf(1) // 1/wavelength of the scaled ones (longest) and unscaled ones
	for i, v := range f {
		x := math.Pow(c.RopeTheta, -float64(2*i)/float64(hd)) / (2 * math.Pi)
		switch {
		case float64(v) >= factor-1e-6*factor:
			maxFull = max(maxFull, x)
		case float64(v) <= 1+1e-6:
			minOne = min(minOne, x)
		default:
			bx = append(bx, x)
			by = append(by, (1/float64(v)-1/factor)/(1-1/factor))
		}
	}
	var invL, invH float64
	switch {
	case factor <= 1:
		return nil, nil // no scaling
	case len(bx) >= 2:
		n := len(bx) - 1
		a := (by[n] - by[0]) / (bx[n] - bx[0])
		b := by[0] - a*bx[0]
		invL = -b / a
		invH = invL + 1/a
	case len(bx) == 1:
		invL = (bx[0] + maxFull) / 2
		invH = invL + (bx[0]-invL)/by[0]
	default:
		if math.IsInf(minOne, 1) {
			minOne = 2 * maxFull
		}
		invL = (maxFull + minOne) / 2
		invH = invL * (1 + 1e-9)
	}
	rs := &RopeScaling{Factor: factor, OriginalMaxPos: orig, LowFreqFactor: orig * invL, HighFreqFactor: orig * invH}
	probe := *c
	probe.RopeScaling = rs
	for i, want := range ropeFactors(&probe) {
		if !(math.Abs(want-float64(f[i])) <= 1e-4*max(1, want)) {
			return nil, fmt.Errorf("%w: rope_freqs that llama3 scaling does not give (frequency %d: %v, llama3's %v)", ErrUnsupported, i, f[i], want)
		}
	}
	return rs, nil
}

// ropeFactors are llama3 scaling's per-frequency divisors (llama.cpp's rope_freqs).
func ropeFactors(c *Config) []float64 {
	rs, hd := c.RopeScaling, c.HeadDim
	low := float64(rs.OriginalMaxPos) / rs.LowFreqFactor
	high := float64(rs.OriginalMaxPos) / rs.HighFreqFactor
	out := make([]float64, hd/2)
	for i := range out {
		wavelen := 2 * math.Pi * math.Pow(c.RopeTheta, float64(2*i)/float64(hd))
		switch {
		case wavelen < high:
			out[i] = 1
		case wavelen > low:
			out[i] = rs.Factor
		default:
			smooth := (float64(rs.OriginalMaxPos)/wavelen - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
			out[i] = 1 / ((1-smooth)/rs.Factor + smooth)
		}
	}
	return out
}

// ggufName is the GGUF name of a Hugging Face tensor name of configuration c.
func ggufName(c *Config, name string) (string, bool) {
	switch name {
	case EmbedTensorName:
		return "token_embd.weight", true
	case NormTensorName:
		return "output_norm.weight", true
	case LMHeadTensorName:
		return "output.weight", true
	}
	m := layerIndexRE.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	suffix := strings.TrimPrefix(name, m[0])
	table := map[string]string{
		AttnNormSuffix: "attn_norm.weight", WqSuffix: "attn_q.weight", WkSuffix: "attn_k.weight",
		WvSuffix: "attn_v.weight", WoSuffix: "attn_output.weight", BqSuffix: "attn_q.bias", BkSuffix: "attn_k.bias",
		BvSuffix: "attn_v.bias", QNormSuffix: "attn_q_norm.weight", KNormSuffix: "attn_k_norm.weight",
		GateSuffix: "ffn_gate.weight", UpSuffix: "ffn_up.weight", DownSuffix: "ffn_down.weight",
		c.FFNNormSuffix(): "ffn_norm.weight",
	}
	if c.PostNorms {
		table[PostAttnNormSuffix] = "post_attention_norm.weight"
		table[PostFFNNormSuffix] = "post_ffw_norm.weight"
	}
	g, ok := table[suffix]
	return "blk." + m[1] + "." + g, ok
}

// ggufFloats decodes a tensor of F32, F16 or BF16 values.
func ggufFloats(info gguf.TensorInfo, b []byte) ([]float32, error) {
	out := make([]float32, info.Elements())
	return out, decodeFloats(info, b, out)
}

// endOfGenerationTokens are the texts of the tokens llama.cpp stops at beside the file's EOS,
// EOT and EOM ids (llama-vocab.cpp): files often name <|im_end|> as EOS and leave out
// <|endoftext|>, or name <eos> and leave out Gemma's <end_of_turn>.
var endOfGenerationTokens = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>"}

// endOfGeneration is the ids of tokens whose text is one of endOfGenerationTokens.
func endOfGeneration(tokens []string) []int {
	var ids []int
	for id, t := range tokens {
		if slices.Contains(endOfGenerationTokens, t) {
			ids = append(ids, id)
		}
	}
	return ids
}
