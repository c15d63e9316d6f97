// Package wgsl holds wspec's compute kernels, one .wgsl file per op, embedded in the binary.
//
// A kernel file may include shared code with a line `//!include name.wgsl` (appended after the
// kernel), ask for a language extension with a line `//!enable name` (subgroups) and set a
// diagnostic with `//!diagnostic off, name` (subgroup_uniformity: a subgroup op whose control
// flow is uniform per subgroup but not per workgroup). Source prepends the prelude: the
// extensions, then `alias wtype = f32;` or, for the f16 variant, `enable f16;` and
// `alias wtype = f16;`, so one file serves both weight types (for a quantized type, `alias wtype = u32;` and
// `const QTYPE` its ggml number), and `wvec`, four values of wtype as the attention kernel loads
// its KV cache, with `wvec4(v) -> vec4f`: for f16, two u32 words unpacked with unpack2x16float
// (lavapipe loads a vec4<f16> per lane more slowly than two words: the 4096² mat-vec ran
// 1.15-1.6x faster so when it read them too), for f32 a vec4<f32> (a quantized type has no
// wvec). Weights are read a group at a time: `wgroup`, the WK values of
// a row that one lane loads at once in runtime.Linear's layout, 16 bytes (8 f16 values as a
// vec4<u32>, 4 f32 values, 4 words of a quantized row), with `wpart(v, h) -> vec4f` its values
// 4h .. 4h + 4 (lavapipe pays per lane and per load, so 8 f16 values a load beat 4: the 4096²
// f16 mat-vec's median went from 6.38 to 5.38 ms). Every kernel's entry point is `main`, its
// group-0 bindings are numbered in the order the host binds them, binding 0 is its Params
// uniform and binding 1 the per-step Step block (common.wgsl), a uniform.
package wgsl

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed *.wgsl
var files embed.FS

// WeightType selects the element type of weight buffers: f32 or f16 values, or one of ggml's
// block-quantized types, whose weights the quantized kernels (matmul_q, embed_q) read as u32
// words and decode with quant.wgsl.
type WeightType int

// Weight types of the kernels' variants.
const (
	F32 WeightType = iota
	F16
	Q8_0
	Q4_0
	Q4_1
	Q5_0
	Q5_1
	Q4_K
	Q5_K
	Q6_K
)

// quantTypes is each quantized type's name and ggml number (GGUF's tensor type, and QTYPE in
// quant.wgsl).
var quantTypes = map[WeightType]struct {
	name string
	ggml uint32
}{
	Q8_0: {"q8_0", 8}, Q4_0: {"q4_0", 2}, Q4_1: {"q4_1", 3}, Q5_0: {"q5_0", 6}, Q5_1: {"q5_1", 7},
	Q4_K: {"q4_k", 12}, Q5_K: {"q5_k", 13}, Q6_K: {"q6_k", 14},
}

// Quantized reports whether w is a block-quantized type.
func (w WeightType) Quantized() bool { _, ok := quantTypes[w]; return ok }

// GGML is a quantized type's ggml type number (0 for f32 and f16).
func (w WeightType) GGML() uint32 { return quantTypes[w].ggml }

// QuantizedTypes lists the block-quantized weight types.
func QuantizedTypes() []WeightType {
	return []WeightType{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K}
}

func (w WeightType) String() string {
	switch {
	case w == F16:
		return "f16"
	case w.Quantized():
		return quantTypes[w].name
	}
	return "f32"
}

// Kernels lists the op kernels (files that define an entry point), sorted.
func Kernels() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".wgsl")
		b, _ := files.ReadFile(e.Name())
		if strings.Contains(string(b), "@compute") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Source returns the WGSL of kernel name for weight type wt. The prelude goes on the kernel
// file's first line (a comment) and included files after its last, so compiler line numbers
// are the kernel file's own.
func Source(name string, wt WeightType) (string, error) {
	b, err := files.ReadFile(name + ".wgsl")
	if err != nil {
		return "", fmt.Errorf("wgsl: no kernel %q", name)
	}
	prelude := ""
	if wt == F16 {
		prelude = "enable f16; "
	}
	for _, ext := range Enables(name) {
		prelude = "enable " + ext + "; " + prelude
	}
	for _, line := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "//!diagnostic "); ok {
			prelude += "diagnostic(" + strings.TrimSpace(d) + "); "
		}
	}
	if wt.Quantized() {
		prelude += fmt.Sprintf("alias wtype = u32; const QTYPE: u32 = %du; ", wt.GGML())
	} else {
		prelude += "alias wtype = " + wt.String() + "; "
	}
	switch {
	case wt == F16:
		prelude += "alias wvec = vec2<u32>; fn wvec4(v: wvec) -> vec4f { return vec4f(unpack2x16float(v.x), unpack2x16float(v.y)); } " +
			"alias wgroup = vec4<u32>; const WK: u32 = 8u; " +
			"fn wpart(v: wgroup, h: u32) -> vec4f { let p = select(v.xy, v.zw, h == 1u); return vec4f(unpack2x16float(p.x), unpack2x16float(p.y)); } "
	case wt.Quantized():
		prelude += "alias wgroup = vec4<u32>; const WK: u32 = 4u; "
	default:
		prelude += "alias wvec = vec4<f32>; fn wvec4(v: wvec) -> vec4f { return v; } " +
			"alias wgroup = vec4<f32>; const WK: u32 = 4u; fn wpart(v: wgroup, h: u32) -> vec4f { return v; } "
	}
	var out strings.Builder
	out.WriteString(prelude)
	out.Write(b)
	seen := map[string]bool{name + ".wgsl": true}
	queue := includes(string(b))
	for len(queue) > 0 {
		inc := queue[0]
		queue = queue[1:]
		if seen[inc] {
			continue
		}
		seen[inc] = true
		sub, err := files.ReadFile(inc)
		if err != nil {
			return "", fmt.Errorf("wgsl: %s includes missing %s", name, inc)
		}
		out.WriteString("\n")
		out.Write(sub)
		queue = append(queue, includes(string(sub))...)
	}
	return out.String(), nil
}

// File returns the text of one embedded .wgsl file as written (no prelude, no includes).
func File(name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("wgsl: no file %q", name)
	}
	return string(b), nil
}

// Enables lists the extensions kernel name asks for with `//!enable` lines.
func Enables(name string) []string {
	b, err := files.ReadFile(name + ".wgsl")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if ext, ok := strings.CutPrefix(strings.TrimSpace(line), "//!enable "); ok {
			out = append(out, strings.TrimSpace(ext))
		}
	}
	return out
}

func includes(src string) []string {
	var out []string
	for _, line := range strings.Split(src, "\n") {
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), "//!include "); ok {
			out = append(out, strings.TrimSpace(inc))
		}
	}
	return out
}
