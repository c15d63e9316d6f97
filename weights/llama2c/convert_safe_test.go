package llama2c

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
)

// snapshot is every file under dir: its path, mode and contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b := []byte{}
		if d.Type().IsRegular() {
			if b, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		files[rel] = info.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// names lists a folder.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// existingModel converts the tiny untied model into parent/hf and adds a file
// of the user's, so that the folder's replacement or survival shows.
func existingModel(t *testing.T) (out string, before map[string]string) {
	t.Helper()
	model, tok, _ := writeTinyModel(t, true)
	out = filepath.Join(t.TempDir(), "hf")
	if err := Convert(model, tok, out, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "NOTES.md"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	return out, snapshot(t, out)
}

// badTokenizer is a tokenizer.bin for writeTinyModel's vocabulary whose pieces
// 260 and 261 are both "a": it parses, and fails only when tokenizer.json is
// written, after model.safetensors and config.json.
func badTokenizer(t *testing.T, good string) string {
	t.Helper()
	tok, err := ReadTokenizer(good, 300)
	if err != nil {
		t.Fatal(err)
	}
	tok.Pieces[261] = tok.Pieces[260]
	return writeTokenizerBin(t, tok)
}

// writeTokenizerBin writes tok as a tokenizer.bin and returns its path.
func writeTokenizerBin(t *testing.T, tok *Tokenizer) string {
	t.Helper()
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, int32(tok.MaxTokenLength))
	for i, p := range tok.Pieces {
		binary.Write(&b, binary.LittleEndian, tok.Scores[i])
		binary.Write(&b, binary.LittleEndian, int32(len(p)))
		b.Write(p)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.bin")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Converting into a folder that holds a model, or anything else, is refused
// and leaves it byte-identical; an empty folder is fine.
func TestConvertRefusesExistingFolder(t *testing.T) {
	model, tok, _ := writeTinyModel(t, false)
	out, before := existingModel(t)
	err := Convert(model, tok, out, false)
	if !errors.Is(err, weights.ErrFolderExists) || !strings.Contains(err.Error(), "holds a model") {
		t.Errorf("convert over a model: got %v, want ErrFolderExists saying it holds a model", err)
	}
	if !maps.Equal(snapshot(t, out), before) {
		t.Error("the existing model changed")
	}

	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "photo.jpg"), []byte("precious"), 0o644)
	if err := Convert(model, tok, other, false); !errors.Is(err, weights.ErrFolderExists) || !strings.Contains(err.Error(), "photo.jpg") {
		t.Errorf("convert into a folder of other files: got %v, want ErrFolderExists naming photo.jpg", err)
	}
	if got := names(t, other); len(got) != 1 {
		t.Errorf("the folder of other files now holds %v", got)
	}

	empty := t.TempDir()
	if err := Convert(model, tok, empty, false); err != nil {
		t.Fatalf("convert into an empty folder: %v", err)
	}
	if _, err := weights.LoadConfig(empty); err != nil {
		t.Fatal(err)
	}
}

// With force, an old model folder is replaced as a whole and nothing is left
// beside it; one that also holds a file of the user's is refused, as it was.
func TestConvertForceReplaces(t *testing.T) {
	model, tok, _ := writeTinyModel(t, false) // tied: no lm_head
	out, before := existingModel(t)
	if err := Convert(model, tok, out, true); !errors.Is(err, weights.ErrFolderExists) || !strings.Contains(err.Error(), "NOTES.md") {
		t.Fatalf("forced over a model folder with NOTES.md: %v", err)
	}
	if got := snapshot(t, out); !maps.Equal(got, before) {
		t.Fatal("the refused folder changed")
	}
	os.Remove(filepath.Join(out, "NOTES.md"))
	if err := Convert(model, tok, out, true); err != nil {
		t.Fatal(err)
	}
	cfg, err := weights.LoadConfig(out)
	if err != nil || !cfg.TieEmbed {
		t.Fatalf("new config %+v, %v", cfg, err)
	}
	if _, err := os.Stat(filepath.Join(out, "NOTES.md")); !os.IsNotExist(err) {
		t.Errorf("a file of the old folder survived: %v", err)
	}
	if got := names(t, filepath.Dir(out)); len(got) != 1 || got[0] != "hf" {
		t.Errorf("beside the model: %v, want only hf", got)
	}
}

// A conversion that fails half-way (the tokenizer is refused after the model
// was written) leaves an existing folder byte-identical, even with force,
// creates none where there was none, and leaves no temporary folder.
func TestConvertFailureLeavesFolder(t *testing.T) {
	model, good, _ := writeTinyModel(t, false)
	tok := badTokenizer(t, good)
	out, before := existingModel(t)
	if err := Convert(model, tok, out, true); err == nil {
		t.Fatal("bad tokenizer: no error")
	}
	if !maps.Equal(snapshot(t, out), before) {
		t.Error("the existing model changed")
	}
	if got := names(t, filepath.Dir(out)); len(got) != 1 || got[0] != "hf" {
		t.Errorf("beside the model: %v, want only hf", got)
	}
	parent := t.TempDir()
	if err := Convert(model, tok, filepath.Join(parent, "new"), false); err == nil {
		t.Fatal("bad tokenizer: no error")
	}
	if got := names(t, parent); len(got) != 0 {
		t.Errorf("a failed conversion left %v", got)
	}
}
