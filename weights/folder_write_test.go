package weights

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree is every file under dir by path, with its contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return err
	})
	return out
}

func ls(t *testing.T, dir string) []string {
	t.Helper()
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// writeFiles is a WriteFolder writer of the given files; fail (when not nil)
// is returned after they are written.
func writeFiles(files map[string]string, fail error) func(string) error {
	return func(dir string) error {
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
		return fail
	}
}

func TestWriteFolder(t *testing.T) {
	old := map[string]string{ConfigFileName: "old config", "model.safetensors": "old weights"}
	nu := map[string]string{ConfigFileName: "new config", "tokenizer.json": "new tokenizer"}
	setup := func(t *testing.T) (parent, dir string) {
		parent = t.TempDir()
		dir = filepath.Join(parent, "m")
		if err := WriteFolder(dir, false, writeFiles(old, nil)); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, dir); !maps.Equal(got, old) {
			t.Fatalf("new folder holds %v", got)
		}
		return parent, dir
	}
	t.Run("refused without force, replaced with it", func(t *testing.T) {
		parent, dir := setup(t)
		ran := false
		err := WriteFolder(dir, false, func(string) error { ran = true; return nil })
		if !errors.Is(err, ErrFolderExists) || ran || !maps.Equal(tree(t, dir), old) {
			t.Fatalf("without force: %v (writer ran: %v)", err, ran)
		}
		if err := WriteFolder(dir, true, writeFiles(nu, nil)); err != nil || !maps.Equal(tree(t, dir), nu) {
			t.Fatalf("with force: %v, holds %v", err, tree(t, dir))
		}
		if got := ls(t, parent); !slices.Equal(got, []string{"m"}) {
			t.Fatalf("left beside it: %v", got)
		}
	})
	t.Run("force refuses a folder holding more than a model", func(t *testing.T) {
		_, dir := setup(t)
		os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
		err := WriteFolder(dir, true, writeFiles(nu, nil))
		if !errors.Is(err, ErrFolderExists) || !strings.Contains(err.Error(), "notes.txt") || CheckFolder(dir, true) == nil {
			t.Fatalf("forced over a folder with notes.txt: %v", err)
		}
		want := maps.Clone(old)
		want["notes.txt"] = "mine"
		if got := tree(t, dir); !maps.Equal(got, want) {
			t.Fatalf("the folder changed: %v", got)
		}
	})
	t.Run("writer fails", func(t *testing.T) {
		parent, dir := setup(t)
		boom := errors.New("boom")
		if err := WriteFolder(dir, true, writeFiles(nu, boom)); !errors.Is(err, boom) {
			t.Fatalf("got %v, want the writer's error", err)
		}
		if !maps.Equal(tree(t, dir), old) || !slices.Equal(ls(t, parent), []string{"m"}) {
			t.Fatalf("after a failed write: %v beside, %v inside", ls(t, parent), tree(t, dir))
		}
	})
	t.Run("renaming the new folder in fails", func(t *testing.T) {
		parent, dir := setup(t)
		calls := 0
		rename = func(from, to string) error {
			if calls++; calls == 2 { // 1: old aside, 2: new in
				return errors.New("rename refused")
			}
			return os.Rename(from, to)
		}
		defer func() { rename = os.Rename }()
		if err := WriteFolder(dir, true, writeFiles(nu, nil)); err == nil || !strings.Contains(err.Error(), "rename refused") {
			t.Fatalf("got %v", err)
		}
		if !maps.Equal(tree(t, dir), old) || !slices.Equal(ls(t, parent), []string{"m"}) {
			t.Fatalf("after a failed rename: %v beside, %v inside", ls(t, parent), tree(t, dir))
		}
	})
	t.Run("empty folder, file, symbolic link", func(t *testing.T) {
		parent := t.TempDir()
		empty := filepath.Join(parent, "empty")
		os.Mkdir(empty, 0o755)
		if err := WriteFolder(empty, false, writeFiles(nu, nil)); err != nil || !maps.Equal(tree(t, empty), nu) {
			t.Fatalf("empty folder: %v", err)
		}
		file := filepath.Join(parent, "file")
		os.WriteFile(file, []byte("data"), 0o644)
		if err := WriteFolder(file, true, writeFiles(nu, nil)); !errors.Is(err, ErrFolderExists) {
			t.Fatalf("a file, forced: %v", err)
		}
		if b, _ := os.ReadFile(file); string(b) != "data" {
			t.Fatal("the file changed")
		}
		link := filepath.Join(parent, "link")
		os.Symlink(empty, link)
		if err := WriteFolder(link, true, writeFiles(old, nil)); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 || !maps.Equal(tree(t, empty), old) {
			t.Fatalf("through a link: %v; the target holds %v", err, tree(t, empty))
		}
		if got := ls(t, parent); !slices.Equal(got, []string{"empty", "file", "link"}) {
			t.Fatalf("left beside: %v", got)
		}
	})
}
