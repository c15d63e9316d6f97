//go:build !js

package drafters

import (
	"crypto/sha256"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/wspec/wspec/weights/home"
)

//go:embed stories15M/draft_model/*.json stories15M/draft_model/*.zst
//go:embed stories15M/eagle/*.json stories15M/eagle/*.zst
//go:embed stories15M/eagle3/*.json stories15M/eagle3/*.zst
//go:embed stories15M/medusa/*.json stories15M/medusa/*.zst
var files embed.FS

// Dir returns the folder of mode's drafter (a mode of Modes, any case), written from the
// binary into <home>/drafters/stories15M/<mode> when it is not there as shipped; "" with no
// error for a mode without a shipped drafter (ngram needs none). When the home folder cannot
// be written, the drafter goes under the system's temporary folder.
func Dir(mode string) (string, error) {
	mode, ok := shipped(mode)
	if !ok {
		return "", nil
	}
	rel := filepath.Join("drafters", Model, mode)
	dir := filepath.Join(home.Default(), rel)
	err := write(dir, path.Join(Model, mode))
	if err != nil {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("wspec-%d", os.Getuid()), rel)
		if err2 := write(dir, path.Join(Model, mode)); err2 != nil {
			return "", fmt.Errorf("drafters: cannot write the shipped %s drafter: %w (and %w)", mode, err, err2)
		}
	}
	return dir, nil
}

// write puts the embedded folder src into dir, each file replaced only when it differs, by a
// rename (so a reader never sees half a file, and concurrent writers agree).
func write(dir, src string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := fs.ReadDir(files, src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		want, err := files.ReadFile(path.Join(src, e.Name()))
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, e.Name())
		if have, err := os.ReadFile(dst); err == nil && sha256.Sum256(have) == sha256.Sum256(want) {
			continue
		}
		tmp, err := os.CreateTemp(dir, e.Name()+".tmp*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(want)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), dst)
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return werr
		}
	}
	return nil
}
