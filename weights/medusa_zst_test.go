package weights

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
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
	m, err := LoadMedusa(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Heads() != 2 || m.Layers != 1 || m.Dim != H || m.Layout != MedusaV2 || m.Blocks[1][0].B[4] != 1 {
		t.Fatalf("loaded %d heads of %d blocks, dim %d, layout %s", m.Heads(), m.Layers, m.Dim, m.Layout)
	}
}

// liarZst writes a compressed safetensors file whose header declares a 2 GiB tensor called
// name, followed by a few bytes of data: expanding what it declares would take 2 GiB.
func liarZst(t *testing.T, path, name string) {
	t.Helper()
	hdr := fmt.Sprintf(`{%q:{"dtype":"F32","shape":[536870912],"data_offsets":[0,2147483648]}}`, name)
	var raw bytes.Buffer
	binary.Write(&raw, binary.LittleEndian, uint64(len(hdr)))
	raw.WriteString(hdr)
	raw.Write(make([]byte, 4096))
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, enc.EncodeAll(raw.Bytes(), nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A compressed drafter or model whose header declares more tensor bytes than its config (or,
// for Medusa heads, the target's) allows is refused as a wrong shape from its header, before
// its data is expanded (without the bound, reading it fails only after the stream).
func TestZstdHeaderBoundedByConfig(t *testing.T) {
	target := &Config{Arch: "llama", Dim: 8, HiddenDim: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, HeadDim: 4, Vocab: 10, MaxSeq: 32,
		RopeTheta: 10000, RMSEps: 1e-5}
	dir := t.TempDir()
	liarZst(t, filepath.Join(dir, MedusaFileName+".zst"), "0.0.linear.weight")
	_, err := LoadMedusa(dir, target)
	if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "declares 2147483648 bytes") {
		t.Errorf("Medusa heads declaring 2 GiB: %v", err)
	}
	if _, err := LoadMedusa(dir, nil); errors.Is(err, ErrShape) || err == nil {
		t.Errorf("without a target: %v (want the stream's own error)", err)
	}

	llama := t.TempDir()
	cfg := `{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
		"num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 10, "max_position_embeddings": 32}`
	if err := os.WriteFile(filepath.Join(llama, ConfigFileName), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	liarZst(t, filepath.Join(llama, SingleFileName+".zst"), EmbedTensorName)
	if _, err := LoadLlama(llama, nil); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("a model declaring 2 GiB: %v", err)
	}
	if _, err := OpenWeights(llama); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "declares") {
		t.Errorf("OpenWeights of a model declaring 2 GiB: %v", err)
	}
}
