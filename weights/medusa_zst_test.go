package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
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
	if _, err := LoadMedusa(dir, nil); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "compressed bytes") {
		t.Errorf("without a target: %v (want the bound of the compression ratio)", err)
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

// A drafter folder's own config.json cannot raise the bound on what its compressed file may
// expand to: an EAGLE head or a draft model whose config claims an intermediate size of 16
// million (a budget of gigabytes) and whose header declares 2 GiB is refused by the target's
// shapes, and without a target by the compression ratio (once, such a bomb took 68.6 s and
// 4.77 GB to refuse).
func TestZstdDrafterBoundedByTarget(t *testing.T) {
	target := &Config{Arch: "llama", Dim: 8, HiddenDim: 12, NLayers: 1, NHeads: 2, NKVHeads: 1, HeadDim: 4, Vocab: 10, MaxSeq: 16,
		RopeTheta: 1e4, RMSEps: 1e-5, BOS: -1}
	inflate := func(dir string, layers int) {
		p := filepath.Join(dir, ConfigFileName)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["intermediate_size"], cfg["num_hidden_layers"] = 16_000_000, layers
		b, _ = json.Marshal(cfg)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, SingleFileName))
		liarZst(t, filepath.Join(dir, SingleFileName+".zst"), EmbedTensorName)
	}
	check := func(what string, err error, mention string) {
		t.Helper()
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), mention) {
			t.Errorf("%s: %v, want ErrShape mentioning %q", what, err, mention)
		}
	}
	eagle := t.TempDir()
	if err := WriteEagle(eagle, testEagle(EagleKind1), EagleWriteOptions{}); err != nil {
		t.Fatal(err)
	}
	inflate(eagle, 1)
	_, err := LoadEagle(eagle, EagleKind1, target)
	check("EAGLE with a target", err, "target's shapes")
	_, err = LoadEagle(eagle, EagleKind1, nil)
	check("EAGLE without a target", err, "compressed bytes")

	draft := t.TempDir()
	if err := WriteConfig(draft, target); err != nil {
		t.Fatal(err)
	}
	inflate(draft, 4)
	_, err = OpenDraft(draft, target)
	check("a draft model", err, "target's shapes")
	_, err = OpenWeights(draft)
	check("OpenWeights", err, "compressed bytes")
}
