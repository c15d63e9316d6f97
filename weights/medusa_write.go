package weights

import (
	"fmt"
	"path/filepath"
)

// WriteMedusa writes m to dir in layout (MedusaV1, MedusaV2 or MedusaVLLM) and dtype (F32,
// F16 or BF16): config.json and medusa_lm_head.safetensors in FasterDecoding's layouts
// (config keys medusa_num_heads, medusa_num_layers), config.json and model.safetensors in
// vLLM's (num_heads, num_hidden_layers). MedusaV2 leaves the output layers out; the others
// need them. Blocks sharing weights are written once per block all the same, as PyTorch's
// state dict lists them.
func WriteMedusa(dir string, m *Medusa, layout string, dtype DType) error {
	mk := map[DType]func(string, []int, []float32) Tensor{F32: F32Tensor, F16: F16Tensor, BF16: BF16Tensor}[dtype]
	if mk == nil {
		return fmt.Errorf("%w: Medusa checkpoint in %s", ErrDType, dtype)
	}
	K, R, H := m.Heads(), m.Layers, m.Dim
	if layout != MedusaV2 && len(m.Out) != K {
		return fmt.Errorf("%w: layout %s needs %d output layers, have %d", ErrBadConfig, layout, K, len(m.Out))
	}
	var ts []Tensor
	cfg := map[string]any{"medusa_num_heads": K, "medusa_num_layers": R, "version": "2"}
	file := MedusaFileName
	switch layout {
	case MedusaV1, MedusaV2:
		for k := range K {
			for j := range R {
				b := m.Blocks[k][j]
				ts = append(ts, mk(fmt.Sprintf("%d.%d.linear.weight", k, j), []int{H, H}, b.W),
					mk(fmt.Sprintf("%d.%d.linear.bias", k, j), []int{H}, b.B))
			}
			if layout == MedusaV1 {
				ts = append(ts, mk(fmt.Sprintf("%d.%d.weight", k, R), []int{m.Vocab, H}, m.Out[k]))
			}
		}
		if layout == MedusaV1 {
			delete(cfg, "version")
		}
	case MedusaVLLM:
		cfg = map[string]any{"architectures": []string{"MedusaModel"}, "num_heads": K, "num_hidden_layers": R,
			"hidden_size": H, "vocab_size": m.Vocab, "medusa_fc_bias": true}
		file = SingleFileName
		for k := range K {
			for j := range R {
				b := m.Blocks[k][j]
				ts = append(ts, mk(fmt.Sprintf("blocks.%d.layers.%d.weight", k, j), []int{H, H}, b.W),
					mk(fmt.Sprintf("blocks.%d.layers.%d.bias", k, j), []int{H}, b.B))
			}
			ts = append(ts, mk(fmt.Sprintf("lm_heads.%d.weight", k), []int{m.Vocab, H}, m.Out[k]))
		}
	default:
		return fmt.Errorf("%w: unknown Medusa layout %q", ErrBadConfig, layout)
	}
	if err := writeJSONFile(filepath.Join(dir, ConfigFileName), cfg); err != nil {
		return err
	}
	return WriteSafeTensors(filepath.Join(dir, file), ts, map[string]string{"format": "pt"})
}
