// Package hub fetches models from a Hugging Face Hub (or a server that answers its file API)
// into the cache layout huggingface_hub uses, so that a model downloaded by either is found by
// the other:
//
//	$HF_HUB_CACHE (default $HF_HOME/hub, $HF_HOME default ~/.cache/huggingface)
//	  models--ORG--NAME/
//	    refs/REVISION             the commit a branch or tag named last
//	    blobs/ETAG                each file's bytes, named by its ETag (sha256 for LFS files)
//	    snapshots/COMMIT/FILE     a relative symbolic link to ../../blobs/ETAG
//
// A download is written to blobs/ETAG.incomplete and resumed from there with a Range request;
// it becomes the blob only once its size and hash (sha256 for an LFS file, git's blob sha1
// otherwise) are the ones the Hub reported. Offline (HF_HUB_OFFLINE=1) the snapshot that
// refs/REVISION names is used as it is, and a file it lacks is an error.
package hub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrNotFound: no such repository, revision or file (the Hub's 404, or offline, not cached).
var ErrNotFound = errors.New("hub: not found")

// ErrCorrupt: a download whose size or hash is not the one the Hub reported.
var ErrCorrupt = errors.New("hub: download does not match the Hub's size or hash")

// Options say where and how to fetch. The zero value reads the environment (FromEnv).
type Options struct {
	Endpoint string // the Hub's address (HF_ENDPOINT; default https://huggingface.co)
	Token    string // sent as a bearer token (HF_TOKEN)
	Revision string // a branch, tag or commit (default main)
	CacheDir string // the hub cache (HF_HUB_CACHE, $HF_HOME/hub)
	Offline  bool   // use the cache alone (HF_HUB_OFFLINE=1)
	// Progress, when set, is told each file's bytes as they arrive.
	Progress func(file string, done, total int64)
}

// FromEnv fills the options left empty from the environment as huggingface_hub reads it.
func (o Options) FromEnv() Options {
	if o.Endpoint == "" {
		o.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	if o.Endpoint == "" {
		o.Endpoint = "https://huggingface.co"
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.Token == "" {
		o.Token = os.Getenv("HF_TOKEN")
	}
	if o.Revision == "" {
		o.Revision = "main"
	}
	if o.CacheDir == "" {
		o.CacheDir = os.Getenv("HF_HUB_CACHE")
	}
	if o.CacheDir == "" {
		h := os.Getenv("HF_HOME")
		if h == "" {
			base, err := os.UserHomeDir()
			if err != nil {
				base = "."
			}
			h = filepath.Join(base, ".cache", "huggingface")
		}
		o.CacheDir = filepath.Join(h, "hub")
	}
	switch strings.ToLower(os.Getenv("HF_HUB_OFFLINE")) {
	case "1", "true", "yes", "on":
		o.Offline = true
	}
	return o
}

// Ref is a model named as a repository: ORG/NAME, and for a repository of GGUF files the
// quantization to choose (ORG/NAME:Q4_K_M, as llama-server's -hf takes it).
type Ref struct {
	Repo  string // ORG/NAME
	Quant string // e.g. Q4_K_M; "" for the default
}

var repoID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
var quantTag = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)

// ParseRef reads ORG/NAME or ORG/NAME:QUANT. ok is false for anything else (a path, say).
func ParseRef(s string) (Ref, bool) {
	repo, quant, hasQuant := strings.Cut(s, ":")
	if !repoID.MatchString(repo) || strings.Contains(repo, "..") || strings.HasSuffix(repo, ".") {
		return Ref{}, false
	}
	if hasQuant && !quantTag.MatchString(quant) {
		return Ref{}, false
	}
	return Ref{Repo: repo, Quant: quant}, true
}

func (r Ref) String() string {
	if r.Quant == "" {
		return r.Repo
	}
	return r.Repo + ":" + r.Quant
}

// repoDir is the repository's folder in the cache.
func (o Options) repoDir(repo string) string {
	return filepath.Join(o.CacheDir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// cachedCommit is the commit the revision names in the cache: itself if it is a commit hash,
// else what refs/REVISION holds.
func (o Options) cachedCommit(repo string) (string, error) {
	if commitHash.MatchString(o.Revision) {
		return o.Revision, nil
	}
	b, err := os.ReadFile(filepath.Join(o.repoDir(repo), "refs", filepath.FromSlash(o.Revision)))
	if err != nil {
		return "", fmt.Errorf("%w: %s at %s is not in the cache %s (offline)", ErrNotFound, repo, o.Revision, o.CacheDir)
	}
	c := strings.TrimSpace(string(b))
	if !commitHash.MatchString(c) {
		return "", fmt.Errorf("%w: %s holds %q, not a commit", ErrCorrupt, filepath.Join(o.repoDir(repo), "refs", o.Revision), c)
	}
	return c, nil
}

// fileName is a file at the repository's top that wspec may write into a snapshot.
var fileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$`)

// Wanted picks the files of a repository that wspec loads: a Hugging Face folder's config,
// tokenizer, generation config and safetensors; or, where the repository holds GGUF files and
// no safetensors, the one GGUF file whose name holds the quantization (Q4_K_M by default, as
// llama-server chooses; else the only one). It returns the files and, for GGUF, the file that
// is the model.
func Wanted(files []string, quant string) (want []string, gguf string, err error) {
	var ggufs, tensors []string
	for _, f := range files {
		switch {
		case !fileName.MatchString(f): // in a folder, hidden, or not a plain name
		case strings.HasSuffix(f, ".gguf"):
			ggufs = append(ggufs, f)
		case strings.HasSuffix(f, ".safetensors"):
			tensors = append(tensors, f)
		}
	}
	if len(tensors) > 0 && quant == "" {
		for _, f := range files {
			switch f {
			case "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
				"model.safetensors.index.json", "special_tokens_map.json", "chat_template.jinja", "chat_template.json":
				want = append(want, f)
			}
		}
		return append(want, tensors...), "", nil
	}
	if len(ggufs) == 0 {
		return nil, "", fmt.Errorf("%w: the repository holds no safetensors and no GGUF file at its top", ErrNotFound)
	}
	q := quant
	if q == "" {
		q = "Q4_K_M"
	}
	var match []string
	for _, f := range ggufs {
		if strings.Contains(strings.ToUpper(f), strings.ToUpper(q)) && !strings.Contains(strings.ToLower(f), "mmproj") {
			match = append(match, f)
		}
	}
	switch {
	case len(match) == 1:
		return match, match[0], nil
	case len(match) > 1:
		return nil, "", fmt.Errorf("%w: %d GGUF files match %s (%s); split files are not read", ErrNotFound, len(match), q, strings.Join(match, ", "))
	case quant == "" && len(ggufs) == 1:
		return ggufs, ggufs[0], nil
	}
	return nil, "", fmt.Errorf("%w: no GGUF file of the repository matches %s (it holds %s)", ErrNotFound, q, strings.Join(ggufs, ", "))
}
