package weights

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrBadEagle is wrapped by errors about an EAGLE or EAGLE-3 drafter checkpoint whose
// contents do not fit together or do not fit its target (a bad d2t map, a hidden size that
// is not the target's, a missing embedding).
var ErrBadEagle = errors.New("weights: bad EAGLE checkpoint")

// The two EAGLE head kinds, named as the speculative methods that use them.
const (
	EagleKind1 = "eagle"  // EAGLE-1 (and EAGLE-2, which has the same weights)
	EagleKind3 = "eagle3" // EAGLE-3
)

// Eagle is an EAGLE-1 or EAGLE-3 drafter head in float32, every matrix in the Hugging Face
// [out, in] layout (as vLLM's and the EAGLE authors' checkpoints name them). With H = Cfg.Dim, I =
// Cfg.HiddenDim, q = NHeads*HeadDim, kv = NKVHeads*HeadDim and in = H (EAGLE-1) or 2H
// (EAGLE-3, whose attention reads [norm(embedding); norm(feature)]):
type Eagle struct {
	Kind         string // EagleKind1 or EagleKind3
	Cfg          Config // the draft layer's LlamaConfig (num_hidden_layers 1)
	TargetHidden int    // Ht: the target's hidden size the features have (EAGLE-3 target_hidden_size, else H)
	DraftVocab   int    // Vd: rows of LMHead (EAGLE-3 draft_vocab_size); Cfg.Vocab for EAGLE-1
	AuxLayerIDs  []int  // EAGLE-3 eagle_aux_hidden_state_layer_ids when given (nil: the default)

	Embed  []float32 // [V, H] embed_tokens, or nil: the target's embedding is used
	FC     []float32 // EAGLE-1 [H, 2H] over [embedding; feature]; EAGLE-3 [H, 3Ht] (nil when 3Ht == H)
	FCBias []float32 // [H] (EAGLE-1 unless config "bias": false), or nil

	Wq, Wk, Wv, Wo     []float32 // [q, in], [kv, in], [kv, in], [H, q]
	WGate, WUp, WDown  []float32 // [I, H], [I, H], [H, I]
	PostNorm           []float32 // [H] post_attention_layernorm
	InputNorm, HidNorm []float32 // EAGLE-3 [H]: input_layernorm (embedding), hidden_norm (feature)
	Norm               []float32 // EAGLE-3 [H] final norm before LMHead
	LMHead             []float32 // EAGLE-3 [Vd, H]; nil for EAGLE-1 (the target's LM head)
	D2T                []int64   // EAGLE-3 [Vd]: target id = draft id + D2T[draft id]; nil: identity
}

// eagleJSON is what config.json adds to a LlamaConfig for EAGLE heads.
type eagleJSON struct {
	Bias             *bool `json:"bias"`
	DraftVocabSize   *int  `json:"draft_vocab_size"`
	TargetHiddenSize *int  `json:"target_hidden_size"`
	AuxIDs           []int `json:"eagle_aux_hidden_state_layer_ids"`
	EagleConfig      *struct {
		AuxIDs []int `json:"eagle_aux_hidden_state_layer_ids"`
	} `json:"eagle_config"`
}

// EagleConfig is an EAGLE head's config.json: the layer's LlamaConfig and the EAGLE keys.
type EagleConfig struct {
	Cfg          Config
	Bias         bool  // fc has a bias (config "bias", default true)
	DraftVocab   int   // draft_vocab_size (default vocab_size)
	TargetHidden int   // target_hidden_size (default hidden_size)
	AuxLayerIDs  []int // eagle_aux_hidden_state_layer_ids (top level or in eagle_config), or nil
}

// LoadEagleConfig reads an EAGLE head folder's config.json.
func LoadEagleConfig(dir string) (*EagleConfig, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ConfigFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j eagleJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrBadConfig, err)
	}
	ec := &EagleConfig{Cfg: *cfg, Bias: true, DraftVocab: cfg.Vocab, TargetHidden: cfg.Dim, AuxLayerIDs: j.AuxIDs}
	if j.Bias != nil {
		ec.Bias = *j.Bias
	}
	if j.DraftVocabSize != nil {
		ec.DraftVocab = *j.DraftVocabSize
	}
	if j.TargetHiddenSize != nil {
		ec.TargetHidden = *j.TargetHiddenSize
	}
	if j.EagleConfig != nil && j.EagleConfig.AuxIDs != nil {
		ec.AuxLayerIDs = j.EagleConfig.AuxIDs
	}
	switch {
	case ec.DraftVocab <= 0 || ec.DraftVocab > cfg.Vocab:
		return nil, fmt.Errorf("%s: %w: draft_vocab_size %d outside 1..%d", path, ErrBadConfig, ec.DraftVocab, cfg.Vocab)
	case ec.TargetHidden <= 0 || ec.TargetHidden > maxModelSize:
		return nil, fmt.Errorf("%s: %w: target_hidden_size %d", path, ErrBadConfig, ec.TargetHidden)
	case cfg.AttnBias:
		return nil, fmt.Errorf("%s: %w: EAGLE heads with attention biases", path, ErrUnsupported)
	case cfg.QKNorm:
		return nil, fmt.Errorf("%s: %w: EAGLE heads with q/k norms", path, ErrUnsupported)
	case cfg.NLayers != 1:
		return nil, fmt.Errorf("%s: %w: num_hidden_layers %d (EAGLE heads have one layer)", path, ErrUnsupported, cfg.NLayers)
	}
	return ec, nil
}

// AuxLayers is the target layers whose input EAGLE-3 reads, in feature order: the explicit
// eagle_aux_hidden_state_layer_ids taken as vLLM does (the input of layer id), else EAGLE's
// default (2, L/2, L-3), clamped into 0..L-1 for targets of fewer than 5 layers.
func (c *EagleConfig) AuxLayers(targetLayers int) ([]int, error) {
	return auxLayers(c.AuxLayerIDs, targetLayers)
}

// AuxLayers is EagleConfig.AuxLayers for the head's AuxLayerIDs.
func (e *Eagle) AuxLayers(targetLayers int) ([]int, error) {
	return auxLayers(e.AuxLayerIDs, targetLayers)
}

func auxLayers(ids []int, targetLayers int) ([]int, error) {
	if ids != nil {
		if len(ids) != 3 {
			return nil, fmt.Errorf("%w: %d eagle_aux_hidden_state_layer_ids, want 3", ErrBadEagle, len(ids))
		}
		for _, l := range ids {
			if l < 0 || l >= targetLayers {
				return nil, fmt.Errorf("%w: aux layer %d of a %d-layer target", ErrBadEagle, l, targetLayers)
			}
		}
		return slices.Clone(ids), nil
	}
	L := targetLayers
	out := []int{2, L / 2, L - 3}
	for i := range out {
		out[i] = max(0, min(out[i], L-1))
	}
	return out, nil
}

// LoadEagle reads an EAGLE head of kind (EagleKind1 or EagleKind3) from dir: config.json
// and model.safetensors (or shards). Tensor names may carry a "model." prefix (vLLM's
// spelling); EAGLE-3's "midlayer." may also be spelt "layers.0.". F32, F16 and BF16 are
// read; d2t must be I64 (or I32); t2d is ignored. A tensor the head does not read is
// ErrUnusedTensor (see checkUnused).
//
// With a target, the head's tensor bytes are bounded by the target's shapes as well as by its
// own config.json (which a hostile folder controls): at most two of the target's layers, an
// fc of 3 x its hidden size squared, and two matrices of its vocabulary, in F32.
func LoadEagle(dir, kind string, target *Config) (*Eagle, error) {
	ec, err := LoadEagleConfig(dir)
	if err != nil {
		return nil, err
	}
	h, th, dv := int64(ec.Cfg.Dim), int64(ec.TargetHidden), int64(ec.DraftVocab)
	b := ec.Cfg.budget(0)
	b.left *= 2 // EAGLE-3's attention reads 2 x hidden
	b.left += 4 * (3*th*h + h + dv*(h+2))
	if target != nil {
		one := *target
		one.NLayers, one.Vocab = 1, 0
		t, v := int64(target.Dim), int64(target.Vocab)
		if most := 4*(2*(one.budget(0).left/4)+3*t*t+2*v*(t+2)) + 1<<20; most < b.left {
			b = &dataBudget{left: most, why: "the target's shapes (one layer, an fc and its vocabulary)"}
		}
	}
	ck, err := openCheckpointWithin(dir, b)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	e, err := EagleFrom(ec, ck, kind)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return e, nil
}

// eagleReader reads tensors under either spelling, checking shapes, and
// records which tensors it read.
type eagleReader struct {
	ck    *Checkpoint
	first error
	used  map[string]bool
}

func (r *eagleReader) name(n string) (string, bool) {
	for _, c := range []string{n, "model." + n} {
		if r.ck.Has(c) {
			return c, true
		}
	}
	return n, false
}

// get reads tensor n of the given shape (nil when optional and absent).
func (r *eagleReader) get(n string, optional bool, shape ...int) []float32 {
	if r.first != nil {
		return nil
	}
	full, ok := r.name(n)
	if !ok {
		if !optional {
			r.first = fmt.Errorf("%w: %q (nor model.%s)", ErrMissingTensor, n, n)
		}
		return nil
	}
	r.used[full] = true
	t, err := r.ck.Tensor(full)
	if err == nil && !slices.Equal(t.Shape, shape) {
		err = fmt.Errorf("%w: %q is %v, want %v", ErrShape, full, t.Shape, shape)
	}
	var v []float32
	if err == nil {
		v, err = t.Float32()
	}
	r.first = err
	return v
}

// EagleFrom reads an EAGLE head of kind from an open checkpoint with config ec.
func EagleFrom(ec *EagleConfig, ck *Checkpoint, kind string) (*Eagle, error) {
	c := ec.Cfg
	H, I, V := c.Dim, c.HiddenDim, c.Vocab
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	e := &Eagle{Kind: kind, Cfg: c, TargetHidden: H, DraftVocab: V}
	r := &eagleReader{ck: ck, used: map[string]bool{}}
	e.Embed = r.get("embed_tokens.weight", true, V, H)
	var pre string
	in := H
	switch kind {
	case EagleKind1:
		if _, ok := r.name("midlayer.self_attn.q_proj.weight"); ok {
			return nil, fmt.Errorf("%w: this is an EAGLE-3 checkpoint (midlayer.*): use method eagle3", ErrBadEagle)
		}
		pre = "layers.0."
		e.FC = r.get("fc.weight", false, H, 2*H)
		if ec.Bias {
			e.FCBias = r.get("fc.bias", false, H)
		}
	case EagleKind3:
		pre = "midlayer."
		if _, ok := r.name(pre + "self_attn.q_proj.weight"); !ok {
			if _, ok := r.name("layers.0.self_attn.q_proj.weight"); ok {
				pre = "layers.0."
			}
		}
		if _, ok := r.name("fc_norm.0.weight"); ok {
			return nil, fmt.Errorf("%w: fc_norm (SpecForge option) in an EAGLE-3 checkpoint", ErrUnsupported)
		}
		e.TargetHidden, e.DraftVocab, e.AuxLayerIDs = ec.TargetHidden, ec.DraftVocab, slices.Clone(ec.AuxLayerIDs)
		in = 2 * H
		if 3*e.TargetHidden != H {
			e.FC = r.get("fc.weight", false, H, 3*e.TargetHidden)
		}
		e.InputNorm = r.get(pre+"input_layernorm.weight", false, H)
		e.HidNorm = r.get(pre+"hidden_norm.weight", false, H)
		e.Norm = r.get("norm.weight", false, H)
		e.LMHead = r.get("lm_head.weight", false, e.DraftVocab, H)
	default:
		return nil, fmt.Errorf("%w: EAGLE kind %q (want eagle or eagle3)", ErrBadEagle, kind)
	}
	e.Wq = r.get(pre+WqSuffix, false, q, in)
	e.Wk = r.get(pre+WkSuffix, false, kv, in)
	e.Wv = r.get(pre+WvSuffix, false, kv, in)
	e.Wo = r.get(pre+WoSuffix, false, H, q)
	e.WGate = r.get(pre+GateSuffix, false, I, H)
	e.WUp = r.get(pre+UpSuffix, false, I, H)
	e.WDown = r.get(pre+DownSuffix, false, H, I)
	e.PostNorm = r.get(pre+FFNNormSuffix, false, H)
	if r.first != nil {
		return nil, r.first
	}
	if kind == EagleKind3 {
		var err error
		if e.D2T, err = readD2T(r, e.DraftVocab, V); err != nil {
			return nil, err
		}
	}
	if err := r.checkUnused(kind); err != nil {
		return nil, err
	}
	return e, nil
}

// checkUnused refuses the tensors the head did not read: a second layer (EAGLE heads
// have one), an fc.bias when config.json says "bias": false, an EAGLE-3 fc.weight when
// 3*target_hidden_size == hidden_size (the features are then used as they are), a
// tensor under both spellings. t2d (EAGLE-3's reverse of d2t) and the rotary_emb.inv_freq
// buffers of old Hugging Face checkpoints are ignored.
func (r *eagleReader) checkUnused(kind string) error {
	var unused []string
	for _, n := range r.ck.Names() {
		base := strings.TrimPrefix(n, "model.")
		if r.used[n] || base == "t2d" || strings.HasSuffix(n, ".rotary_emb.inv_freq") {
			continue
		}
		unused = append(unused, n)
	}
	if len(unused) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s that an %s head with this config.json (one layer) does not read: %s",
		ErrUnusedTensor, countTensors(len(unused)), kind, listNames(unused))
}

// readD2T reads d2t [vd] (I64 or I32) and checks that every draft id maps into 0..v-1. A
// missing d2t is the identity, which needs vd == v.
func readD2T(r *eagleReader, vd, v int) ([]int64, error) {
	full, ok := r.name("d2t")
	if !ok {
		if vd != v {
			return nil, fmt.Errorf("%w: %q, needed when draft_vocab_size %d != vocab_size %d", ErrMissingTensor, "d2t", vd, v)
		}
		return nil, nil
	}
	r.used[full] = true
	t, err := r.ck.Tensor(full)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(t.Shape, []int{vd}) {
		return nil, fmt.Errorf("%w: %q is %v, want [%d]", ErrShape, full, t.Shape, vd)
	}
	size := t.DType.Size()
	if t.DType != I64 && t.DType != I32 || len(t.Data) != vd*size {
		return nil, fmt.Errorf("%w: %q is %s with %d bytes, want I64 [%d]", ErrDType, full, t.DType, len(t.Data), vd)
	}
	out := make([]int64, vd)
	for i := range out {
		if size == 8 {
			out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		} else {
			out[i] = int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
		if to := int64(i) + out[i]; to < 0 || to >= int64(v) {
			return nil, fmt.Errorf("%w: d2t[%d] = %d maps draft id %d to %d, outside the vocabulary of %d", ErrBadEagle, i, out[i], i, to, v)
		}
	}
	return out, nil
}

// CheckTarget checks that the head fits a target of config t: the same vocabulary, features
// of the target's width, and an embedding of width H (its own, or the target's when H is
// the target's hidden size).
func (e *Eagle) CheckTarget(t *Config) error {
	c := e.Cfg
	switch {
	case c.Vocab != t.Vocab:
		return fmt.Errorf("%w: vocab_size %d, the target's is %d", ErrBadEagle, c.Vocab, t.Vocab)
	case e.Kind == EagleKind1 && c.Dim != t.Dim:
		return fmt.Errorf("%w: hidden_size %d, the target's is %d (EAGLE-1 reads the target's features and LM head)", ErrBadEagle, c.Dim, t.Dim)
	case e.TargetHidden != t.Dim:
		return fmt.Errorf("%w: target_hidden_size %d, the target's hidden size is %d", ErrBadEagle, e.TargetHidden, t.Dim)
	case e.Embed == nil && c.Dim != t.Dim:
		return fmt.Errorf("%w: no embed_tokens and hidden_size %d differs from the target's %d", ErrBadEagle, c.Dim, t.Dim)
	}
	return nil
}
