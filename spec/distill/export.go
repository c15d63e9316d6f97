package distill

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/wspec/wspec/weights"
)

// headConfig is the config of a one-layer head of width H on target config t. The head's
// attention has a key/value head per query head (what the trainer's layer computes), whatever
// the target shares.
func headConfig(t weights.Config, hidden int) weights.Config {
	c := t
	c.NLayers, c.HiddenDim = 1, hidden
	c.NKVHeads = c.NHeads
	c.TieEmbed = false
	c.MaxSeq = max(c.MaxSeq, 2048)
	return c
}

// split3 cuts a stacked [3n, in] matrix into its three [n, in] parts.
func split3(w []float32) (a, b, c []float32) {
	n := len(w) / 3
	return append([]float32(nil), w[:n]...), append([]float32(nil), w[n:2*n]...), append([]float32(nil), w[2*n:]...)
}

// split2 cuts a stacked [2n, in] matrix into its two halves.
func split2(w []float32) (a, b []float32) {
	n := len(w) / 2
	return append([]float32(nil), w[:n]...), append([]float32(nil), w[n:]...)
}

// Export is the trained head as the EAGLE-3 loader reads it.
func (e *Eagle3) Export() *weights.Eagle {
	c := headConfig(e.target.Cfg, e.o.Hidden)
	w := &weights.Eagle{Kind: weights.EagleKind3, Cfg: c, TargetHidden: e.H, DraftVocab: len(e.used),
		AuxLayerIDs: append([]int(nil), e.ds.Aux...)}
	w.FC = append([]float32(nil), e.FC.W...)
	w.InputNorm = append([]float32(nil), e.InNorm.W...)
	w.HidNorm = append([]float32(nil), e.HidNorm.W...)
	w.Norm = append([]float32(nil), e.Norm.W...)
	w.LMHead = append([]float32(nil), e.Head.W...)
	e.L.exportInto(w)
	w.D2T = make([]int64, len(e.used))
	for i, id := range e.used {
		w.D2T[i] = int64(id) - int64(i)
	}
	return w
}

// exportInto copies the layer's weights into an EAGLE head.
func (l *layer) exportInto(w *weights.Eagle) {
	w.Wq, w.Wk, w.Wv = split3(l.Wqkv.W)
	w.Wo = append([]float32(nil), l.Wo.W...)
	w.PostNorm = append([]float32(nil), l.PostNorm.W...)
	w.WGate, w.WUp = split2(l.W13.W)
	w.WDown = append([]float32(nil), l.W2.W...)
}

// compress replaces the safetensors file path by path.zst (zstd), keeping its tensors and
// metadata.
func compress(path string) error {
	st, err := weights.Open(path)
	if err != nil {
		return err
	}
	var ts []weights.Tensor
	for _, n := range st.Names() {
		t, err := st.Tensor(n)
		if err != nil {
			st.Close()
			return err
		}
		ts = append(ts, t)
	}
	err = weights.WriteSafeTensors(path+".zst", ts, st.Metadata())
	st.Close()
	if err != nil {
		return err
	}
	return os.Remove(path)
}

// SaveEagle writes head w to dir as the EAGLE loaders read it, in float16, zstd-compressed
// (model.safetensors.zst), with the target's ID in config.json. The folder is written whole
// (weights.WriteFolder): an existing one is replaced only with force.
func SaveEagle(dir string, w *weights.Eagle, id weights.TargetID, force bool) error {
	return weights.WriteFolder(dir, force, func(dir string) error {
		if err := weights.WriteEagle(dir, w, weights.EagleWriteOptions{DType: weights.F16}); err != nil {
			return fmt.Errorf("distill: %w", err)
		}
		if err := compress(filepath.Join(dir, weights.SingleFileName)); err != nil {
			return err
		}
		return weights.WriteTargetID(dir, id)
	})
}

// SaveMedusa writes heads m to dir as FasterDecoding's v2 layout (config.json,
// medusa_lm_head.safetensors.zst in float16), with the target's ID in config.json; as
// SaveEagle, whole.
func SaveMedusa(dir string, m *weights.Medusa, id weights.TargetID, force bool) error {
	return weights.WriteFolder(dir, force, func(dir string) error {
		if err := weights.WriteMedusa(dir, m, weights.MedusaV2, weights.F16); err != nil {
			return fmt.Errorf("distill: %w", err)
		}
		if err := compress(filepath.Join(dir, weights.MedusaFileName)); err != nil {
			return err
		}
		return weights.WriteTargetID(dir, id)
	})
}

// SaveLlama writes a draft model to dir as a Hugging Face Llama folder (config.json,
// generation_config.json, model.safetensors.zst in float16, tied embedding), with the
// target's ID in config.json; as SaveEagle, whole.
func SaveLlama(dir string, w *weights.LlamaWeights, id weights.TargetID, force bool) error {
	return weights.WriteFolder(dir, force, func(dir string) error { return saveLlama(dir, w, id) })
}

func saveLlama(dir string, w *weights.LlamaWeights, id weights.TargetID) error {
	if err := weights.WriteConfig(dir, &w.Cfg); err != nil {
		return fmt.Errorf("distill: %w", err)
	}
	var ts []weights.Tensor
	add := func(name string, v []float32, shape []int) { ts = append(ts, weights.F16Tensor(name, shape, v)) }
	c := w.Cfg
	for _, s := range c.ExpectedTensors() {
		var v []float32
		switch s.Name {
		case weights.EmbedTensorName:
			v = w.Embed
		case weights.NormTensorName:
			v = w.Norm
		case weights.LMHeadTensorName:
			v = w.LMHead
		default:
			for i, ly := range w.Layers {
				for suffix, t := range map[string][]float32{weights.AttnNormSuffix: ly.AttnNorm, weights.WqSuffix: ly.Wq,
					weights.WkSuffix: ly.Wk, weights.WvSuffix: ly.Wv, weights.WoSuffix: ly.Wo, weights.FFNNormSuffix: ly.FFNNorm,
					weights.GateSuffix: ly.WGate, weights.UpSuffix: ly.WUp, weights.DownSuffix: ly.WDown} {
					if s.Name == weights.LayerTensorName(i, suffix) {
						v = t
					}
				}
			}
		}
		if v == nil {
			return fmt.Errorf("distill: no values for %s", s.Name)
		}
		add(s.Name, v, s.Shape)
	}
	if err := weights.WriteSafeTensors(filepath.Join(dir, weights.SingleFileName+".zst"), ts, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	return weights.WriteTargetID(dir, id)
}
