package runtime

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/wgsl"
)

// wgslField is a member of a WGSL struct with its uniform-layout offset.
type wgslField struct {
	name   string
	offset int
}

// wgslStruct parses `struct name { a: u32, b: f32, ... }` out of src and lays it out by the
// WGSL rules for the scalar and vector types the blocks use; the size is rounded up to the
// struct's alignment (the array stride in a storage buffer).
func wgslStruct(t *testing.T, src, name string) ([]wgslField, int) {
	t.Helper()
	m := regexp.MustCompile(`(?s)struct\s+` + name + `\s*\{(.*?)\}`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("no struct %s", name)
	}
	body := regexp.MustCompile(`(?m)//.*$|/\*.*?\*/`).ReplaceAllString(m[1], "")
	sizes := map[string][2]int{ // size, alignment
		"u32": {4, 4}, "i32": {4, 4}, "f32": {4, 4},
		"vec2u": {8, 8}, "vec2i": {8, 8}, "vec2f": {8, 8}, "vec2<u32>": {8, 8}, "vec2<f32>": {8, 8},
		"vec4u": {16, 16}, "vec4i": {16, 16}, "vec4f": {16, 16}, "vec4<u32>": {16, 16}, "vec4<f32>": {16, 16},
	}
	var fields []wgslField
	off, align := 0, 4
	for _, decl := range strings.Split(body, ",") {
		decl = strings.TrimSpace(decl)
		if decl == "" {
			continue
		}
		nameType := strings.SplitN(decl, ":", 2)
		if len(nameType) != 2 {
			t.Fatalf("struct %s: cannot read %q", name, decl)
		}
		sa, ok := sizes[strings.TrimSpace(nameType[1])]
		if !ok {
			t.Fatalf("struct %s: type %q not handled by this test", name, nameType[1])
		}
		off = (off + sa[1] - 1) / sa[1] * sa[1]
		fields = append(fields, wgslField{strings.TrimSpace(nameType[0]), off})
		off += sa[0]
		align = max(align, sa[1])
	}
	return fields, (off + align - 1) / align * align
}

// norm makes WGSL's snake_case and Go's CamelCase names comparable: n_draft, NDraft -> ndraft.
func norm(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// TestUniformMirrors: every Go struct that mirrors a WGSL uniform block has the block's
// fields, in order, at the block's offsets, and its size; paramBytes writes exactly that.
func TestUniformMirrors(t *testing.T) {
	mirrors := []struct {
		kernel, block string // the file (without .wgsl) that declares the block
		goType        any
		users         []string // the kernels that use the block
	}{ // Step and Params are uniforms (sizes multiples of 16), the others storage array elements
		{"common", "Step", StepBlock{}, nil},
		{"common", "RowInfo", RowInfo{}, nil},
		{"common", "Block", AttnBlock{}, nil},
		{"common", "SeqInfo", SeqInfo{}, nil},
		{"common", "Adj", batch.Adj{}, nil},
		{"chain_next", "Params", ChainParams{}, nil},
		{"sample_io", "RowResult", RowResult{}, []string{"sample_rows", "sample_draw"}},
		{"sample_pick", "RowResult", RowResult{}, nil},
		{"embed", "Params", EmbedParams{}, nil},
		{"embed_q", "Params", EmbedParams{}, nil},
		{"rmsnorm", "Params", RMSNormParams{}, nil},
		{"mat_io", "Params", MatParams{}, []string{"matmul", "matmul_wg", "matmul_q", "matmul_q_sg"}},
		{"rope_kv", "Params", RopeParams{}, nil},
		{"qk_norm", "Params", QKNormParams{}, nil},
		{"attention", "Params", AttnParams{}, nil},
		{"attention_wg", "Params", AttnParams{}, nil},
		{"sample_io", "Params", SampleParams{}, []string{"sample_rows", "sample_draw"}},
		{"sample_pick", "Params", SampleParams{}, nil},
		{"copy_rows", "Params", CopyRowsParams{}, nil},
		{"argmax_rows", "Params", ArgmaxParams{}, nil},
	}
	seen := map[string]bool{}
	for _, mr := range mirrors {
		seen[mr.kernel] = true
		for _, u := range mr.users {
			seen[u] = true
		}
		src, err := wgsl.File(mr.kernel + ".wgsl")
		if err != nil {
			t.Fatal(err)
		}
		fields, size := wgslStruct(t, src, mr.block)
		if mr.block == "Step" || mr.block == "Params" {
			if size%16 != 0 {
				t.Errorf("%s.%s: a uniform block of %d bytes (not a multiple of 16)", mr.kernel, mr.block, size)
			}
		}
		gt := reflect.TypeOf(mr.goType)
		if gt.NumField() != len(fields) {
			t.Errorf("%s.%s has %d fields, %s %d", mr.kernel, mr.block, len(fields), gt.Name(), gt.NumField())
			continue
		}
		for i, f := range fields {
			gf := gt.Field(i)
			if norm(gf.Name) != norm(f.name) || int(gf.Offset) != f.offset || gf.Type.Size() != 4 {
				t.Errorf("%s.%s field %d: WGSL %s at %d, Go %s (%d bytes) at %d", mr.kernel, mr.block, i, f.name, f.offset, gf.Name, gf.Type.Size(), gf.Offset)
			}
		}
		if int(gt.Size()) != size || len(ParamBytes(mr.goType)) != size {
			t.Errorf("%s.%s is %d bytes, %s %d (paramBytes %d)", mr.kernel, mr.block, size, gt.Name(), gt.Size(), len(ParamBytes(mr.goType)))
		}
	}
	for _, k := range wgsl.Kernels() {
		if !seen[k] {
			t.Errorf("kernel %s has no mirror listed in this test", k)
		}
	}
}

// TestLogprobStride: the host reads the sampler's lp rows with the kernels' stride.
func TestLogprobStride(t *testing.T) {
	src, err := wgsl.File("sample_io.wgsl")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const LP_STRIDE: u32 = (\d+)u;`).FindStringSubmatch(src)
	if m == nil || m[1] != fmt.Sprint(LogprobStride) {
		t.Fatalf("sample_io.wgsl's LP_STRIDE %v, runtime.LogprobStride %d", m, LogprobStride)
	}
	if !strings.Contains(src, fmt.Sprintf("min(n, %du)", batch.MaxTopLogprobs)) {
		t.Fatalf("sample_io.wgsl does not cap the top logprobs at %d", batch.MaxTopLogprobs)
	}
}

// TestStepBlockBytes: EncodeFrom copies StepBlockBytes bytes of a StepBlock's image.
func TestStepBlockBytes(t *testing.T) {
	if n := len(ParamBytes(StepBlock{})); n != StepBlockBytes {
		t.Fatalf("a StepBlock is %d bytes, StepBlockBytes says %d", n, StepBlockBytes)
	}
}
