package runtime

import (
	"fmt"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// Progress is told how many bytes of tensors have been read of how many.
type Progress func(done, total int64)

// LoadHostWeights reads a Llama-family checkpoint folder (config.json + safetensors) into
// float32 host memory, checking every tensor's presence and shape against the config first.
func LoadHostWeights(dir string) (*ref.LlamaWeights, error) {
	return LoadHostWeightsProgress(dir, nil)
}

// LoadHostWeightsProgress is LoadHostWeights reporting its progress (progress may be nil).
func LoadHostWeightsProgress(dir string, progress Progress) (*ref.LlamaWeights, error) {
	cfg, err := weights.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	ck, err := weights.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	return hostWeightsFrom(cfg, ck, progress)
}

// HostWeightsFrom reads the tensors of cfg's architecture from ck.
func HostWeightsFrom(cfg *weights.Config, ck *weights.Checkpoint) (*ref.LlamaWeights, error) {
	return hostWeightsFrom(cfg, ck, nil)
}

func hostWeightsFrom(cfg *weights.Config, ck *weights.Checkpoint, progress Progress) (*ref.LlamaWeights, error) {
	if err := cfg.CheckTensors(ck); err != nil {
		return nil, err
	}
	var total, done int64
	for _, name := range ck.Names() {
		if t, err := ck.Tensor(name); err == nil {
			total += int64(len(t.Data))
		}
	}
	read := func(name string) ([]float32, error) {
		t, err := ck.Tensor(name)
		if err != nil {
			return nil, err
		}
		if done += int64(len(t.Data)); progress != nil {
			progress(done, total)
		}
		v, err := t.Float32()
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		return v, nil
	}
	var firstErr error
	get := func(name string) []float32 {
		v, err := read(name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	}
	w := &ref.LlamaWeights{Cfg: *cfg}
	w.Embed = get("model.embed_tokens.weight")
	w.Norm = get("model.norm.weight")
	if cfg.TieEmbed {
		w.LMHead = w.Embed
	} else {
		w.LMHead = get("lm_head.weight")
	}
	for i := 0; i < cfg.NLayers; i++ {
		l := func(s string) []float32 { return get(weights.LayerTensorName(i, s)) }
		ly := ref.LlamaLayer{
			AttnNorm: l(weights.AttnNormSuffix), FFNNorm: l(weights.FFNNormSuffix),
			Wq: l(weights.WqSuffix), Wk: l(weights.WkSuffix), Wv: l(weights.WvSuffix), Wo: l(weights.WoSuffix),
			WGate: l(weights.GateSuffix), WUp: l(weights.UpSuffix), WDown: l(weights.DownSuffix),
		}
		if cfg.AttnBias {
			ly.Bq, ly.Bk, ly.Bv = l(weights.BqSuffix), l(weights.BkSuffix), l(weights.BvSuffix)
		}
		w.Layers = append(w.Layers, ly)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return w, nil
}
