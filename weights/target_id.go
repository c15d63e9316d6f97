package weights

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
)

// ErrWrongTarget is wrapped by the error for a drafter whose config names a target model
// other than the one it is being loaded against.
var ErrWrongTarget = errors.New("weights: the drafter was trained for another target model")

// TargetIDKey is the config.json key under which a drafter records the target it was
// trained for: "wspec_target": {"name": "stories15M", "fingerprint": "llama-d288-..."}.
const TargetIDKey = "wspec_target"

// TargetID names the target model a drafter (an EAGLE head, Medusa heads, a draft model)
// was trained for. Name is informational (the target's folder name); Fingerprint decides:
// the target's architecture sizes and a hash of a strided sample of its LM head (the
// embedding when tied) and of its final norm, each value rounded to float16 first, so that
// the same model stored in F32 or F16 has the same fingerprint.
type TargetID struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
}

// fingerprintStride samples every 131st value of the LM head (about 70k of stories15M's 9.2M).
const fingerprintStride = 131

// fingerprint is the Fingerprint of a model of config c whose LM head and final norm
// values are given by head(i) (i < n) and norm.
func fingerprint(c *Config, n int, head func(i int) float32, norm []float32) string {
	h := fnv.New64a()
	var b [2]byte
	put := func(v float32) {
		binary.LittleEndian.PutUint16(b[:], F32ToF16(v))
		h.Write(b[:])
	}
	for i := 0; i < n; i += fingerprintStride {
		put(head(i))
	}
	for _, v := range norm {
		put(v)
	}
	return fmt.Sprintf("%s-d%d-l%d-h%d-kv%d-i%d-v%d-%016x", c.Arch, c.Dim, c.NLayers, c.NHeads, c.NKVHeads, c.HiddenDim, c.Vocab, h.Sum64())
}

// TargetIDOfWeights is the TargetID of a model already in memory.
func TargetIDOfWeights(name string, w *LlamaWeights) TargetID {
	head := func(i int) float32 { return w.LMHead[i] }
	return TargetID{Name: name, Fingerprint: fingerprint(&w.Cfg, len(w.LMHead), head, w.Norm)}
}

// TargetIDOf is the TargetID of the model of config c in checkpoint ck, reading only the
// values the fingerprint samples.
func TargetIDOf(name string, c *Config, ck *Checkpoint) (TargetID, error) {
	headName := LMHeadTensorName
	if c.TieEmbed || !ck.Has(headName) {
		headName = EmbedTensorName
	}
	ht, err := ck.Tensor(headName)
	if err != nil {
		return TargetID{}, err
	}
	n, err := ht.checkSize()
	if err != nil {
		return TargetID{}, err
	}
	if !ht.DType.IsFloat() {
		return TargetID{}, fmt.Errorf("%w: %q is %s", ErrDType, headName, ht.DType)
	}
	nt, err := ck.Tensor(NormTensorName)
	if err != nil {
		return TargetID{}, err
	}
	norm, err := nt.Float32()
	if err != nil {
		return TargetID{}, err
	}
	head := func(i int) float32 {
		switch ht.DType {
		case F16:
			return F16ToF32(binary.LittleEndian.Uint16(ht.Data[2*i:]))
		case BF16:
			return BF16ToF32(binary.LittleEndian.Uint16(ht.Data[2*i:]))
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(ht.Data[4*i:]))
	}
	return TargetID{Name: name, Fingerprint: fingerprint(c, n, head, norm)}, nil
}

// ReadTargetID reads the wspec_target of a drafter folder's config.json: nil (and no
// error) when the config has none, as third-party drafters do not.
func ReadTargetID(dir string) (*TargetID, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, nil // a GGUF file (a draft model): it names no target
	}
	path := filepath.Join(dir, ConfigFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j struct {
		ID *TargetID `json:"wspec_target"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrBadConfig, err)
	}
	if j.ID != nil && j.ID.Fingerprint == "" {
		return nil, fmt.Errorf("%s: %w: %s without a fingerprint", path, ErrBadConfig, TargetIDKey)
	}
	return j.ID, nil
}

// WriteTargetID adds (or replaces) wspec_target in the config.json already in dir.
func WriteTargetID(dir string, id TargetID) error {
	return editConfig(dir, func(j map[string]any) { j[TargetIDKey] = id })
}

// CheckTargetID checks that the drafter in dir may run on the target of config c in
// checkpoint ck: a drafter whose config has no wspec_target passes (no check); otherwise
// the fingerprints must be equal, else the error wraps ErrWrongTarget and names both.
func CheckTargetID(dir string, c *Config, ck *Checkpoint) error {
	want, err := ReadTargetID(dir)
	if err != nil || want == nil {
		return err
	}
	got, err := TargetIDOf("", c, ck)
	if err != nil {
		return err
	}
	if got.Fingerprint != want.Fingerprint {
		return fmt.Errorf("%w: %s was trained for %q (fingerprint %s), the target %s has fingerprint %s",
			ErrWrongTarget, dir, want.Name, want.Fingerprint, ck.Dir(), got.Fingerprint)
	}
	return nil
}

// CheckTargetDir is CheckTargetID for the target model folder targetDir.
func CheckTargetDir(drafterDir, targetDir string) error {
	if id, err := ReadTargetID(drafterDir); err != nil || id == nil {
		return err
	}
	c, err := LoadConfig(targetDir)
	if err != nil {
		return err
	}
	ck, err := OpenCheckpoint(targetDir)
	if err != nil {
		return err
	}
	defer ck.Close()
	return CheckTargetID(drafterDir, c, ck)
}

// CheckTargetModel is CheckTargetID for an opened model (a folder or a GGUF file): the
// fingerprint read through its tensor source, so the same weights give the same fingerprint
// whatever file holds them.
func CheckTargetModel(drafterDir string, m *Model) error {
	want, err := ReadTargetID(drafterDir)
	if err != nil || want == nil {
		return err
	}
	got, err := TargetIDOfSource("", m.Config, m.Source)
	if err != nil {
		return err
	}
	if got.Fingerprint != want.Fingerprint {
		return fmt.Errorf("%w: %s was trained for %q (fingerprint %s), the target has fingerprint %s",
			ErrWrongTarget, drafterDir, want.Name, want.Fingerprint, got.Fingerprint)
	}
	return nil
}

// TargetIDOfSource is TargetIDOf for any tensor source, reading its LM head a row at a time.
func TargetIDOfSource(name string, c *Config, src TensorSource) (TargetID, error) {
	headName := LMHeadTensorName
	if c.TieEmbed {
		headName = EmbedTensorName
	}
	rows, cols, _, err := src.Shape(headName)
	if err != nil {
		return TargetID{}, err
	}
	norm := make([]float32, c.Dim)
	if err := src.Rows(NormTensorName, 0, norm); err != nil {
		return TargetID{}, err
	}
	row, cur := make([]float32, cols), -1
	var readErr error
	head := func(i int) float32 {
		if r := i / cols; r != cur {
			if err := src.Rows(headName, r, row); err != nil && readErr == nil {
				readErr = err
			}
			cur = r
		}
		return row[i%cols]
	}
	fp := fingerprint(c, rows*cols, head, norm)
	return TargetID{Name: name, Fingerprint: fp}, readErr
}
