package weights

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File names of a Hugging Face checkpoint folder.
const (
	SingleFileName = "model.safetensors"
	IndexFileName  = "model.safetensors.index.json"
)

// Checkpoint is a model folder's tensors, from one safetensors file or from
// shards listed by model.safetensors.index.json. A multimodal checkpoint shows its language
// model only, under the text model's names (textModel).
type Checkpoint struct {
	dir   string
	files []*SafeTensors
	where map[string]*SafeTensors
	names []string          // sorted
	alias map[string]string // a text model's name -> its name in a multimodal checkpoint
}

// OpenCheckpoint opens the safetensors of a model folder: the shards named by
// model.safetensors.index.json when it exists (each shard may also be stored as
// "<shard>.zst"), else model.safetensors, else model.safetensors.zst.
func OpenCheckpoint(dir string) (*Checkpoint, error) { return openCheckpointWithin(dir, nil) }

// openCheckpointWithin is OpenCheckpoint with the tensor bytes of all its files bounded by b
// (nil: unbounded), checked from each header before its data is read.
func openCheckpointWithin(dir string, b *dataBudget) (*Checkpoint, error) {
	idx := filepath.Join(dir, IndexFileName)
	if _, err := os.Stat(idx); err == nil {
		return openSharded(dir, idx, b)
	}
	for _, name := range []string{SingleFileName, SingleFileName + ".zst"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		st, err := openWithin(p, b)
		if err != nil {
			return nil, err
		}
		c := &Checkpoint{dir: dir, files: []*SafeTensors{st}, where: map[string]*SafeTensors{}}
		for _, n := range st.names {
			c.where[n] = st
		}
		c.names = st.Names()
		c.textModel()
		return c, nil
	}
	return nil, fmt.Errorf("weights: %s has no %s, %s.zst or %s: %w",
		dir, SingleFileName, SingleFileName, IndexFileName, fs.ErrNotExist)
}

// openSharded opens every shard the index names and checks that each listed
// tensor is in its shard and that each shard holds only the tensors the index
// places there.
func openSharded(dir, idx string, budget *dataBudget) (*Checkpoint, error) {
	b, err := os.ReadFile(idx)
	if err != nil {
		return nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", idx, ErrMalformed, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: %w: empty or missing weight_map", idx, ErrMalformed)
	}
	c := &Checkpoint{dir: dir, where: make(map[string]*SafeTensors, len(index.WeightMap))}
	shards := map[string]*SafeTensors{}
	for name, file := range index.WeightMap {
		if file == "" || file == "." || file == ".." || strings.ContainsAny(file, `/\`) {
			c.Close()
			return nil, fmt.Errorf("%s: %w: tensor %q maps to %q, not a file name in the folder", idx, ErrMalformed, name, file)
		}
		st, ok := shards[file]
		if !ok {
			st, err = openShard(filepath.Join(dir, file), budget)
			if err != nil {
				c.Close()
				return nil, err
			}
			shards[file] = st
			c.files = append(c.files, st)
		}
		if !st.Has(name) {
			c.Close()
			return nil, fmt.Errorf("%s: %w: %q, which the index places in %s", idx, ErrMissingTensor, name, file)
		}
		c.where[name] = st
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	// A tensor the index does not place in its shard would be silently unseen.
	for _, st := range c.files {
		for _, name := range st.names {
			if c.where[name] != st {
				c.Close()
				return nil, fmt.Errorf("%s: %w: shard %s holds %q, which the index does not place there",
					idx, ErrMalformed, filepath.Base(st.path), name)
			}
		}
	}
	c.textModel()
	return c, nil
}

// Prefixes of the language model in a multimodal checkpoint (Gemma 3 4B and up,
// Gemma3ForConditionalGeneration): transformers before 4.52 wrote language_model.model.* and
// language_model.lm_head.*, later ones model.language_model.* and lm_head.*.
var textPrefixes = []struct{ stored, text string }{
	{"language_model.model.", "model."},
	{"language_model.lm_head.", "lm_head."},
	{"model.language_model.", "model."},
}

// textModel shows a multimodal checkpoint as its language model: its tensors under the text
// model's names, the vision tower's and the projector's hidden. Other checkpoints are left as
// they are.
func (c *Checkpoint) textModel() {
	multimodal := false
	for _, n := range c.names {
		if strings.HasPrefix(n, "language_model.") || strings.HasPrefix(n, "model.language_model.") {
			multimodal = true
			break
		}
	}
	if !multimodal {
		return
	}
	where, alias := map[string]*SafeTensors{}, map[string]string{}
	var names []string
	for _, stored := range c.names {
		text, ok := "", false
		for _, p := range textPrefixes {
			if rest, cut := strings.CutPrefix(stored, p.stored); cut {
				text, ok = p.text+rest, true
				break
			}
		}
		if !ok && stored == LMHeadTensorName {
			text, ok = stored, true
		}
		if !ok {
			continue // the vision tower and the projector
		}
		where[text], alias[text] = c.where[stored], stored
		names = append(names, text)
	}
	sort.Strings(names)
	c.where, c.alias, c.names = where, alias, names
}

// openShard opens path, or path+".zst" when only that exists.
func openShard(path string, b *dataBudget) (*SafeTensors, error) {
	st, err := openWithin(path, b)
	if errors.Is(err, fs.ErrNotExist) {
		if _, zerr := os.Stat(path + ".zst"); zerr == nil {
			return openWithin(path+".zst", b)
		}
	}
	return st, err
}

// Dir is the folder the checkpoint was opened from.
func (c *Checkpoint) Dir() string { return c.dir }

// Names lists every tensor, sorted.
func (c *Checkpoint) Names() []string { return append([]string(nil), c.names...) }

// Has reports whether the checkpoint holds a tensor called name.
func (c *Checkpoint) Has(name string) bool {
	_, ok := c.where[name]
	return ok
}

// Tensor returns the named tensor (pointing into its file, valid until Close),
// or an error wrapping ErrMissingTensor that names it.
func (c *Checkpoint) Tensor(name string) (Tensor, error) {
	st, ok := c.where[name]
	if !ok {
		return Tensor{}, fmt.Errorf("%w: %q not in checkpoint %s", ErrMissingTensor, name, c.dir)
	}
	if stored, ok := c.alias[name]; ok {
		t, err := st.Tensor(stored)
		t.Name = name
		return t, err
	}
	return st.Tensor(name)
}

// Close closes every file; tensors read from the checkpoint become invalid.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.files, c.where, c.names = nil, nil, nil
	return first
}
