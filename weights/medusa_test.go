package weights

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testMedusa(K, R, H, V int) *Medusa {
	m := &Medusa{Dim: H, Layers: R, Vocab: V, Layout: MedusaV1}
	for k := range K {
		var blocks []MedusaBlock
		for j := range R {
			blocks = append(blocks, MedusaBlock{W: randomFloats(H*H, uint32(100*k+j+1)), B: randomFloats(H, uint32(100*k+j+50))})
		}
		m.Blocks = append(m.Blocks, blocks)
		m.Out = append(m.Out, randomFloats(V*H, uint32(1000+k)))
	}
	return m
}

// Every layout and dtype reads back what was written; v2 has no output layers.
func TestMedusaRoundTrip(t *testing.T) {
	for _, layout := range []string{MedusaV1, MedusaV2, MedusaVLLM} {
		for _, dt := range []DType{F32, BF16} {
			for _, kr := range [][2]int{{1, 1}, {3, 2}} {
				want := testMedusa(kr[0], kr[1], 8, 12)
				dir := t.TempDir()
				if err := WriteMedusa(dir, want, layout, dt); err != nil {
					t.Fatal(err)
				}
				got, err := LoadMedusa(dir, nil)
				if err != nil {
					t.Fatalf("%s %s: %v", layout, dt, err)
				}
				if got.Layout != layout || got.Heads() != kr[0] || got.Layers != kr[1] || got.Dim != 8 {
					t.Fatalf("%s %s: read %s, %d heads of %d blocks, dim %d", layout, dt, got.Layout, got.Heads(), got.Layers, got.Dim)
				}
				if layout == MedusaV2 != (got.Out == nil) {
					t.Fatalf("%s: %d output layers", layout, len(got.Out))
				}
				tol := map[DType]float32{F32: 0, BF16: 1e-2}[dt]
				close := func(a, b []float32) bool {
					for i := range a {
						if d := a[i] - b[i]; d > tol || d < -tol {
							return false
						}
					}
					return len(a) == len(b)
				}
				for k := range kr[0] {
					for j := range kr[1] {
						if !close(got.Blocks[k][j].W, want.Blocks[k][j].W) || !close(got.Blocks[k][j].B, want.Blocks[k][j].B) {
							t.Fatalf("%s %s: block %d.%d differs", layout, dt, k, j)
						}
					}
					if got.Out != nil && (got.Vocab != 12 || !close(got.Out[k], want.Out[k])) {
						t.Fatalf("%s %s: output layer %d differs", layout, dt, k)
					}
				}
			}
		}
	}
}

// writeRaw writes tensors (all F32, named as given) and a config to a folder.
func writeRaw(t *testing.T, cfg string, ts []Tensor, file string) string {
	t.Helper()
	dir := t.TempDir()
	if cfg != "" {
		if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteSafeTensors(filepath.Join(dir, file), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func fdTensors(K, R, H, V int, prefix string, skip string, reshape string) []Tensor {
	var ts []Tensor
	add := func(name string, shape ...int) {
		name = prefix + name
		if name == skip {
			return
		}
		if name == reshape {
			shape = append([]int{1}, shape...)
		}
		n, _ := numElements(shape)
		ts = append(ts, F32Tensor(name, shape, randomFloats(n, uint32(len(ts)+1))))
	}
	for k := range K {
		for j := range R {
			add(fmt.Sprintf("%d.%d.linear.weight", k, j), H, H)
			add(fmt.Sprintf("%d.%d.linear.bias", k, j), H)
		}
		if V > 0 {
			add(fmt.Sprintf("%d.%d.weight", k, R), V, H)
		}
	}
	return ts
}

// The published quirks: a config that undercounts the heads, a prefix, model.safetensors, and
// shared blocks stored once (only block 0 per head) with R from the config or the output layer.
func TestMedusaQuirks(t *testing.T) {
	dir := writeRaw(t, `{"medusa_num_heads": 2, "medusa_num_layers": 1}`, fdTensors(5, 1, 8, 10, "medusa_head.", "", ""), SingleFileName)
	m, err := LoadMedusa(dir, nil)
	if err != nil || m.Heads() != 5 || m.Layers != 1 || m.Layout != MedusaV1 {
		t.Fatalf("lying config: %v", err)
	}
	// Shared weights stored once: v2 takes R from the config, v1 from the output layer's index.
	dir = writeRaw(t, `{"medusa_num_heads": 3, "medusa_num_layers": 3}`, fdTensors(3, 1, 8, 0, "", "", ""), MedusaFileName)
	if m, err = LoadMedusa(dir, nil); err != nil || m.Layers != 3 || &m.Blocks[2][2].W[0] != &m.Blocks[2][0].W[0] {
		t.Fatalf("shared v2 blocks: %v", err)
	}
	ts := fdTensors(2, 1, 8, 0, "", "", "")
	ts = append(ts, F32Tensor("0.2.weight", []int{10, 8}, make([]float32, 80)), F32Tensor("1.2.weight", []int{10, 8}, make([]float32, 80)))
	if m, err = LoadMedusa(writeRaw(t, "", ts, MedusaFileName), nil); err != nil || m.Layers != 2 || m.Vocab != 10 {
		t.Fatalf("shared v1 blocks: %v", err)
	}
}

// A malformed checkpoint gives a clear error naming what is wrong.
func TestMedusaMalformed(t *testing.T) {
	cases := []struct {
		name, cfg string
		ts        []Tensor
		want      error
		msg       string
	}{
		{"missing bias", "", fdTensors(2, 2, 8, 10, "", "1.1.linear.bias", ""), ErrMissingTensor, "1.1.linear.bias"},
		{"missing block", "", fdTensors(3, 1, 8, 0, "", "1.0.linear.weight", ""), ErrMissingTensor, "block 0 of head 1"},
		{"missing head 0", "", fdTensors(2, 1, 8, 0, "", "0.0.linear.weight", ""), ErrMissingTensor, "block 0 of head 0"},
		{"missing output", "", fdTensors(2, 1, 8, 10, "", "1.1.weight", ""), ErrMissingTensor, "head 1 has no output"},
		{"wrong block shape", "", fdTensors(2, 1, 8, 10, "", "", "1.0.linear.weight"), ErrShape, "1.0.linear.weight"},
		{"wrong bias shape", "", fdTensors(2, 1, 8, 10, "", "", "0.0.linear.bias"), ErrShape, "0.0.linear.bias"},
		{"wrong output shape", "", fdTensors(2, 1, 8, 10, "", "", "1.1.weight"), ErrShape, "1.1.weight"},
		{"no heads", "", []Tensor{F32Tensor("lm_head.weight", []int{2, 2}, make([]float32, 4))}, ErrMissingTensor, "no Medusa head"},
		{"bad config", `{"medusa_num_layers": "two"}`, fdTensors(1, 1, 8, 10, "", "", ""), ErrBadConfig, "config.json"},
		{"mixed layouts", "", append(fdTensors(1, 1, 8, 0, "", "", ""), F32Tensor("blocks.0.layers.0.weight", []int{8, 8}, make([]float32, 64))), ErrMalformed, "both"},
	}
	for _, c := range cases {
		_, err := LoadMedusa(writeRaw(t, c.cfg, c.ts, MedusaFileName), nil)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v (want %v mentioning %q)", c.name, err, c.want, c.msg)
		}
	}
	if _, err := LoadMedusa(t.TempDir(), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty folder: %v", err)
	}
	if err := WriteMedusa(t.TempDir(), testMedusa(1, 1, 4, 4), "medusa-v9", F32); !errors.Is(err, ErrBadConfig) {
		t.Errorf("unknown layout written: %v", err)
	}
}

// Medusa tensors that no head reads (a bias or output layer of a head that
// has no blocks, a bias of a block that has no weight) are refused, named.
// Other tensors (a base model saved alongside) are still ignored.
func TestMedusaRefusesUnused(t *testing.T) {
	f32 := func(name string, shape ...int) Tensor {
		n, _ := numElements(shape)
		return F32Tensor(name, shape, make([]float32, n))
	}
	vllm := func(K int) []Tensor {
		var ts []Tensor
		for k := range K {
			ts = append(ts, f32(fmt.Sprintf("blocks.%d.layers.0.weight", k), 8, 8), f32(fmt.Sprintf("lm_heads.%d.weight", k), 10, 8))
		}
		return ts
	}
	cases := []struct {
		name string
		ts   []Tensor
		want string // "" when accepted
	}{
		{"vLLM output layer of a missing head", append(vllm(2), f32("lm_heads.2.weight", 10, 8)), "lm_heads.2.weight"},
		{"vLLM bias of a missing block", append(vllm(2), f32("blocks.1.layers.1.bias", 8)), "blocks.1.layers.1.bias"},
		{"bias of a missing head", append(fdTensors(2, 1, 8, 10, "", "", ""), f32("2.0.linear.bias", 8)), "2.0.linear.bias"},
		{"bias of a missing shared block", append(fdTensors(2, 1, 8, 0, "", "", ""), f32("0.1.linear.bias", 8)), "0.1.linear.bias"},
		{"base model alongside", append(vllm(2), f32("model.norm.weight", 8)), ""},
	}
	for _, c := range cases {
		_, err := LoadMedusa(writeRaw(t, "", c.ts, MedusaFileName), nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrUnusedTensor) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want ErrUnusedTensor naming %s", c.name, err, c.want)
		}
	}
}

// Indices in tensor names are bounded like the head and block counts: an output
// layer {k}.{R}.weight with a huge R over shared blocks asked for R copies of
// block 0 (5 million here; 2^31 crashed the process), and an index past the
// int range read as 0, passing for head 0.
func TestMedusaIndexBounds(t *testing.T) {
	f32 := func(name string, shape ...int) Tensor {
		n, _ := numElements(shape)
		return F32Tensor(name, shape, make([]float32, n))
	}
	cases := map[string][]Tensor{
		"output layer index": append(fdTensors(2, 1, 8, 0, "", "", ""), f32("0.5000000.weight", 10, 8), f32("1.5000000.weight", 10, 8)),
		"index past int":     {f32("99999999999999999999.0.linear.weight", 8, 8), f32("99999999999999999999.0.linear.bias", 8)},
	}
	for name, ts := range cases {
		m, err := LoadMedusa(writeRaw(t, "", ts, MedusaFileName), nil)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "too large") {
			layers := 0
			if m != nil {
				layers = m.Layers
			}
			t.Errorf("%s: got %v (%d blocks per head), want ErrMalformed: index too large", name, err, layers)
		}
	}
}
