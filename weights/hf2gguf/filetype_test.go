package hf2gguf

import (
	"testing"

	"github.com/wspec/wspec/weights/gguf"
)

// The K-quant mixes choose each matrix's type as llama-quantize does (llama_tensor_get_type,
// no importance matrix), with its fallbacks for rows that are not whole blocks.
func TestMatrixTypes(t *testing.T) {
	const n = 16 // layers: use_more_bits holds for 0, 1, 4, 7, 10, 13, 14, 15
	for _, c := range []struct {
		ft    FileType
		role  tensorRole
		layer int
		ncols int
		want  gguf.TensorType
	}{
		{FileQ4_K_M, roleOther, 5, 2048, gguf.Q4_K},
		{FileQ4_K_M, roleAttnV, 0, 2048, gguf.Q6_K},
		{FileQ4_K_M, roleAttnV, 4, 2048, gguf.Q6_K},
		{FileQ4_K_M, roleAttnV, 5, 2048, gguf.Q4_K},
		{FileQ4_K_M, roleFFNDown, 15, 8192, gguf.Q6_K},
		{FileQ4_K_M, roleFFNDown, 6, 8192, gguf.Q4_K},
		{FileQ4_K_M, roleOutput, 0, 2048, gguf.Q6_K},
		{FileQ4_K_M, roleEmbed, 0, 2048, gguf.Q4_K},
		{FileQ4_K_M, roleOther, 0, 896, gguf.Q5_0},  // Qwen2.5-0.5B's hidden: not 256-blocks
		{FileQ4_K_M, roleOutput, 0, 896, gguf.Q8_0}, // the output's own rule
		{FileQ5_K_M, roleOther, 0, 896, gguf.Q5_1},
		{FileQ5_K_M, roleAttnV, 1, 2048, gguf.Q6_K},
		{FileQ6_K, roleOther, 3, 896, gguf.Q8_0},
		{FileQ4_K_S, roleAttnV, 3, 2048, gguf.Q5_K},
		{FileQ4_K_S, roleFFNDown, 1, 2048, gguf.Q5_K},
		{FileQ4_K_S, roleFFNDown, 2, 2048, gguf.Q4_K},
		{FileQ8_0, roleOutput, 0, 2048, gguf.Q8_0},
		{FileQ4_0, roleOutput, 0, 2048, gguf.Q6_K},
		{FileQ4_0, roleOther, 0, 48, gguf.F16}, // rows of 48: not whole blocks of any type
		{FileF16, roleOutput, 0, 2048, gguf.F16},
	} {
		if got := c.ft.matrixType(c.role, c.layer, n, c.ncols); got != c.want {
			t.Errorf("%s role %d layer %d of %d, %d columns: %v, want %v", c.ft.Name, c.role, c.layer, n, c.ncols, got, c.want)
		}
	}
	if _, err := ParseFileType("Q4_K_M"); err != nil {
		t.Error(err)
	}
	if _, err := ParseFileType("q3_k_m"); err == nil {
		t.Error("q3_k_m: want an error")
	}
}
