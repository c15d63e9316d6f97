// Package docs_test checks the documentation against the tree: every file or folder of the
// repository that README.md, CONTRIBUTING.md, BENCHMARKS.md and docs/*.md name exists, and
// none of them points outside the repository.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoPath matches what reads as a path of the repository: a name under one of its top-level
// folders, or a file at its root, with an optional :line or #anchor after it.
var repoPath = regexp.MustCompile(`(?:^|[\s(\x60"'\[])((?:\.\./|\./)?(?:cmd|spec|runtime|weights|wgsl|deploy|docs|\.ci|shared)/[\w./*@{},+-]*[\w*/]|[\w-]+\.md)`)

func docs(t *testing.T) []string {
	files := []string{"../README.md", "../CONTRIBUTING.md", "../BENCHMARKS.md"}
	more, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(files, more...)
}

func TestDocsNameOnlyPathsThatExist(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := filepath.Rel("..", filepath.Dir(doc)) // the file's folder in the repository
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range repoPath.FindAllStringSubmatch(line, -1) {
				p := strings.TrimRight(m[1], ".")
				if strings.ContainsAny(p, "{}") {
					continue // a pattern such as drafters/{medusa,eagle}
				}
				// ../ is relative to the file (a link); ./ and the rest to the repository (a
				// path in text or a command); a bare file.md to the file, else the repository
				root := filepath.Join(repo, p)
				switch {
				case strings.HasPrefix(p, "../"):
					root = filepath.Join(repo, base, p)
				case strings.HasSuffix(p, ".md") && !strings.Contains(p, "/"):
					if _, err := os.Stat(filepath.Join(repo, base, p)); err == nil {
						root = filepath.Join(repo, base, p)
					}
				}
				if rel, err := filepath.Rel(repo, root); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d names %s, outside the repository", doc, i+1, p)
					continue
				}
				if found, _ := filepath.Glob(root); len(found) == 0 {
					t.Errorf("%s:%d names %s, which is not in the repository", doc, i+1, p)
				}
			}
		}
	}
}
