package runtime

import (
	"testing"

	"github.com/wspec/wspec/wgsl"
)

// TestKernelsCompile compiles every kernel in every weight type it takes with every fusion switch on.
func TestKernelsCompile(t *testing.T) {
	d := testDevice(t)
	all := map[string]Overrides{
		"matmul":      {"NORM": 1, "SWIGLU": 1, "HAS_BIAS": 1, "ACCUM": 1, "LAST_ROWS": 1, "SILU": 1, "KEEP": 1, "ROWS": 16, "COLS": 4},
		"matmul_wg":   {"NORM": 1, "SWIGLU": 1, "HAS_BIAS": 1, "ACCUM": 1, "LAST_ROWS": 1, "SILU": 1, "KEEP": 1, "ROWS": 16, "COLS": 4},
		"matmul_q":    {"NORM": 1, "SWIGLU": 1, "HAS_BIAS": 1, "ACCUM": 1, "LAST_ROWS": 1, "SILU": 1, "KEEP": 1, "ROWS": 16, "COLS": 4},
		"matmul_q_sg": {"NORM": 1, "SWIGLU": 1, "HAS_BIAS": 1, "ACCUM": 1, "LAST_ROWS": 1, "SILU": 1, "KEEP": 1, "ROWS": 16, "COLS": 4},
		"rope_kv":     {"LLAMA3": 1}, "argmax_rows": {"MAP": 1},
	}
	quantized := map[string]bool{"matmul_q": true, "matmul_q_sg": true, "embed_q": true} // compiled in the quantized types only
	for _, k := range wgsl.Kernels() {
		types := []wgsl.WeightType{wgsl.F32, wgsl.F16}
		if quantized[k] {
			types = wgsl.QuantizedTypes()
		}
		for _, wt := range types {
			if _, err := d.Pipeline(k, wt, nil); err != nil {
				t.Errorf("%s/%v: %v", k, wt, err)
			}
			if o, ok := all[k]; ok {
				if _, err := d.Pipeline(k, wt, o); err != nil {
					t.Errorf("%s/%v %v: %v", k, wt, o, err)
				}
			}
		}
	}
}
