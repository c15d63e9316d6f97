package weights

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// rename is os.Rename; tests replace it to fail on purpose.
var rename = os.Rename

// WriteFolder makes the folder dir all at once, never leaving a half-written or
// a lost one: write fills a new temporary folder beside dir (in the same parent,
// so that renames are atomic), whose files are then synced to disk and which is
// renamed to dir.
//
// A dir that does not exist, or exists and is empty, is simply replaced. A dir
// that holds anything (a model or other files) is refused with ErrFolderExists
// before write runs, unless force is set and it holds only a model's files
// (modelFile: a folder holding anything else is refused even then, since
// replacing it would delete that); then, once the new folder is complete, the
// old one is renamed aside, the new one renamed in, and the old one removed.
// When write or any step fails, dir is left exactly as it was and the temporary
// folder is removed. A dir that is a symbolic link to a folder is resolved: the
// folder it points to is the one replaced.
func WriteFolder(dir string, force bool, write func(tmp string) error) (err error) {
	if dir, err = resolveFolder(dir); err != nil {
		return err
	}
	if err := checkReplaceable(dir, force); err != nil {
		return err
	}
	parent, base := filepath.Split(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := syncTree(tmp); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return install(tmp, dir, force)
}

// resolveFolder makes dir absolute and, when it is a symbolic link, follows it.
func resolveFolder(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return "", err
		}
	}
	if filepath.Dir(dir) == dir {
		return "", fmt.Errorf("%w: %s cannot be replaced", ErrFolderExists, dir)
	}
	return dir, nil
}

// CheckFolder says (an error wrapping ErrFolderExists) whether WriteFolder would refuse
// dir, so that a command can refuse before minutes of work rather than after.
// It also makes and removes a folder where WriteFolder would make its temporary one (in the
// nearest existing ancestor), so a place that cannot be written (a read-only disk, /proc) is
// refused first too.
func CheckFolder(dir string, force bool) error {
	dir, err := resolveFolder(dir)
	if err != nil {
		return err
	}
	if err := checkReplaceable(dir, force); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	for {
		if _, err := os.Stat(parent); err == nil || filepath.Dir(parent) == parent {
			break
		}
		parent = filepath.Dir(parent)
	}
	probe, err := os.MkdirTemp(parent, ".wspec-probe-")
	if err != nil {
		return fmt.Errorf("%s cannot be written: %w", dir, err)
	}
	return os.Remove(probe)
}

// modelFile reports whether a file of that name belongs to a model or drafter folder
// (what a model download or wspec's own writers put there), so that --force may replace it.
func modelFile(name string) bool {
	switch name {
	case ConfigFileName, "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
		"special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja",
		"README.md", "LICENSE", ".gitattributes":
		return true
	}
	return strings.Contains(name, ".safetensors")
}

// checkReplaceable refuses a dir that is not a folder, or (without force) one
// that is not empty, saying whether it holds a model; with force, one that
// holds files no model folder holds.
func checkReplaceable(dir string, force bool) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is a file, not a folder", ErrFolderExists, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return err
	}
	if force {
		var other []string
		for _, e := range entries {
			if !e.Type().IsRegular() || !modelFile(e.Name()) {
				other = append(other, e.Name())
			}
		}
		if len(other) == 0 {
			return nil
		}
		return fmt.Errorf("%w: %s holds files that are not a model's (%s), which replacing it would delete; move them, or choose another folder",
			ErrFolderExists, dir, listNames(other))
	}
	for _, e := range entries {
		if n := e.Name(); n == ConfigFileName || strings.Contains(n, ".safetensors") {
			return fmt.Errorf("%w: %s already holds a model (%s)", ErrFolderExists, dir, n)
		}
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return fmt.Errorf("%w: %s holds other files (%s)",
		ErrFolderExists, dir, listNames(names))
}

// install renames the complete folder tmp to dir, moving an existing dir aside
// first (refused without force unless it is empty) and removing it afterwards.
// On failure dir is as it was.
func install(tmp, dir string, force bool) error {
	parent := filepath.Dir(dir)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return installNew(tmp, dir)
	case err != nil:
		return err
	case fi.IsDir() && os.Remove(dir) == nil: // an empty folder: rmdir refuses others
		return installNew(tmp, dir)
	}
	if err := checkReplaceable(dir, force); err != nil {
		return err // something was written into dir meanwhile
	}
	aside, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".old-")
	if err != nil {
		return err
	}
	old := filepath.Join(aside, "old")
	if err := rename(dir, old); err != nil {
		os.Remove(aside)
		return err
	}
	if err := rename(tmp, dir); err != nil {
		if rerr := rename(old, dir); rerr != nil {
			return fmt.Errorf("%w; the old folder is kept as %s (moving it back failed: %v)", err, old, rerr)
		}
		os.Remove(aside)
		return err
	}
	syncDir(parent) // best effort: the files themselves are on disk already
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("%s is written, but its old contents could not be removed from %s: %w", dir, aside, err)
	}
	return nil
}

// installNew renames tmp to dir, where nothing is.
func installNew(tmp, dir string) error {
	if err := rename(tmp, dir); err != nil {
		return err
	}
	syncDir(filepath.Dir(dir)) // best effort: the files themselves are on disk already
	return nil
}

// syncTree flushes every file and folder under dir to disk.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return syncDir(p)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
