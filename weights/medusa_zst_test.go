package weights

import (
	"path/filepath"
	"testing"
)

// medusa_lm_head.safetensors.zst (how the repository ships its Medusa heads) loads like the
// uncompressed file.
func TestMedusaZstd(t *testing.T) {
	H := 8
	blk := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i%7) - 3
		}
		return v
	}
	var ts []Tensor
	for _, name := range []string{"0.0", "1.0"} {
		ts = append(ts, F32Tensor(name+".linear.weight", []int{H, H}, blk(H*H)), F32Tensor(name+".linear.bias", []int{H}, blk(H)))
	}
	dir := t.TempDir()
	if err := WriteSafeTensors(filepath.Join(dir, MedusaFileName+".zst"), ts, nil); err != nil {
		t.Fatal(err)
	}
	m, err := LoadMedusa(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Heads() != 2 || m.Layers != 1 || m.Dim != H || m.Layout != MedusaV2 || m.Blocks[1][0].B[4] != 1 {
		t.Fatalf("loaded %d heads of %d blocks, dim %d, layout %s", m.Heads(), m.Layers, m.Dim, m.Layout)
	}
}
