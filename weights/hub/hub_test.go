package hub

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub answers the Hub's file API as huggingface_hub reads it: the model info at
// /api/models/REPO/revision/REV; HEAD and GET of /REPO/resolve/REV/FILE, small files served
// with their git blob sha1 as ETag, LFS files (*.safetensors, *.gguf) redirected to a storage
// address with X-Linked-Etag (their sha256) and X-Linked-Size; Range requests.
type fakeHub struct {
	t      *testing.T
	srv    *httptest.Server
	repo   string
	commit string
	files  map[string][]byte
	token  string // required as a bearer token when set

	mu       sync.Mutex
	cutAfter int            // the next storage GET stops after this many bytes (0: never)
	corrupt  string         // this file's bytes are served wrong
	ranges   []string       // the Range headers storage GETs carried
	gets     map[string]int // storage and resolve GETs per file
}

func newFakeHub(t *testing.T, repo string, files map[string][]byte) *fakeHub {
	h := &fakeHub{t: t, repo: repo, commit: strings.Repeat("ab", 20), files: files, gets: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func isLFS(name string) bool {
	return strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".gguf")
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	if h.token != "" && !strings.HasPrefix(r.URL.Path, "/storage/") && r.Header.Get("Authorization") != "Bearer "+h.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/api/models/"+h.repo+"/revision/main" || p == "/api/models/"+h.repo+"/revision/"+h.commit:
		var sib []map[string]string
		for name := range h.files {
			sib = append(sib, map[string]string{"rfilename": name})
		}
		json.NewEncoder(w).Encode(map[string]any{"id": h.repo, "sha": h.commit, "siblings": sib})
	case strings.HasPrefix(p, "/"+h.repo+"/resolve/"+h.commit+"/"):
		name := strings.TrimPrefix(p, "/"+h.repo+"/resolve/"+h.commit+"/")
		b, ok := h.files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if isLFS(name) {
			sum := sha256.Sum256(b)
			w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
			w.Header().Set("X-Linked-Size", fmt.Sprint(len(b)))
			w.Header().Set("Location", h.srv.URL+"/storage/"+name)
			w.WriteHeader(http.StatusFound)
			return
		}
		g := sha1.New()
		fmt.Fprintf(g, "blob %d\x00", len(b))
		g.Write(b)
		w.Header().Set("ETag", `"`+hex.EncodeToString(g.Sum(nil))+`"`)
		h.gets[name]++
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(h.bytesOf(name)))
	case strings.HasPrefix(p, "/storage/"):
		name := strings.TrimPrefix(p, "/storage/")
		if r.Method == http.MethodGet {
			h.gets[name]++
			h.ranges = append(h.ranges, r.Header.Get("Range"))
		}
		b := h.bytesOf(name)
		if cut := h.cutAfter; cut > 0 && r.Method == http.MethodGet {
			h.cutAfter = 0
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			w.WriteHeader(http.StatusOK)
			w.Write(b[:cut])
			panic(http.ErrAbortHandler) // the connection drops midway
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	default:
		http.NotFound(w, r)
	}
}

func (h *fakeHub) bytesOf(name string) []byte {
	b := h.files[name]
	if name == h.corrupt {
		b = append([]byte("X"), b[1:]...)
	}
	return b
}

func (h *fakeHub) options(cache string) Options {
	return Options{Endpoint: h.srv.URL, CacheDir: cache, Token: h.token}
}

func folderFiles() map[string][]byte {
	weights := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	return map[string][]byte{
		"config.json": []byte(`{"model_type":"llama"}`), "tokenizer.json": []byte(`{}`),
		"model.safetensors": weights, "README.md": []byte("# a model"), "onnx/model.onnx": []byte("no"),
	}
}

// A Hugging Face folder is fetched into huggingface_hub's layout: refs/main names the commit,
// the snapshot's files link to blobs named by their ETags, files wspec does not load stay
// behind; a second call downloads nothing; offline, the snapshot is found without the server.
func TestDownloadFolderIntoTheHubCache(t *testing.T) {
	files := folderFiles()
	h := newFakeHub(t, "org/tiny", files)
	h.token = "secret"
	cache := t.TempDir()
	if _, err := Download(context.Background(), Ref{Repo: "org/tiny"}, Options{Endpoint: h.srv.URL, CacheDir: cache}); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("without the token: %v", err)
	}
	var reported int64
	o := h.options(cache)
	o.Progress = func(file string, done, total int64) { reported = done }
	snap, err := Download(context.Background(), Ref{Repo: "org/tiny"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "models--org--tiny", "snapshots", h.commit); snap != want {
		t.Fatalf("snapshot %s, want %s", snap, want)
	}
	for name, b := range files {
		got, err := os.ReadFile(filepath.Join(snap, name))
		if name == "README.md" || strings.Contains(name, "/") {
			if err == nil {
				t.Errorf("%s fetched, though wspec does not load it", name)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s: %v", name, err)
		}
		target, err := os.Readlink(filepath.Join(snap, name))
		if err != nil || !strings.HasPrefix(target, filepath.Join("..", "..", "blobs")+string(filepath.Separator)) {
			t.Errorf("%s links to %q (%v), want ../../blobs/ETAG", name, target, err)
		}
	}
	sum := sha256.Sum256(files["model.safetensors"])
	if _, err := os.Stat(filepath.Join(cache, "models--org--tiny", "blobs", hex.EncodeToString(sum[:]))); err != nil {
		t.Errorf("the LFS blob is not named by its sha256: %v", err)
	}
	if ref, _ := os.ReadFile(filepath.Join(cache, "models--org--tiny", "refs", "main")); string(ref) != h.commit {
		t.Errorf("refs/main holds %q", ref)
	}
	if reported != int64(len(files["model.safetensors"])) {
		t.Errorf("progress reported %d bytes", reported)
	}
	gets := h.gets["model.safetensors"]
	if _, err := Download(context.Background(), Ref{Repo: "org/tiny"}, o); err != nil || h.gets["model.safetensors"] != gets {
		t.Errorf("a second download: %v, %d GETs of the weights (was %d)", err, h.gets["model.safetensors"], gets)
	}
	h.srv.Close()
	off := Options{CacheDir: cache, Offline: true}
	if got, err := Download(context.Background(), Ref{Repo: "org/tiny"}, off); err != nil || got != snap {
		t.Fatalf("offline: %s, %v", got, err)
	}
	if _, err := Download(context.Background(), Ref{Repo: "org/other"}, off); !errors.Is(err, ErrNotFound) {
		t.Fatalf("offline, not cached: %v", err)
	}
}

// A download cut midway is resumed with a Range request from the bytes kept; a file whose
// bytes are not the ones the Hub reported is refused, linked nowhere and not kept.
func TestDownloadResumesAndRefusesCorrupt(t *testing.T) {
	files := folderFiles()
	h := newFakeHub(t, "org/tiny", files)
	cache := t.TempDir()
	h.cutAfter = 10000
	if _, err := Download(context.Background(), Ref{Repo: "org/tiny"}, h.options(cache)); err == nil {
		t.Fatal("a dropped connection gave no error")
	}
	snap, err := Download(context.Background(), Ref{Repo: "org/tiny"}, h.options(cache))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(snap, "model.safetensors")); !bytes.Equal(got, files["model.safetensors"]) {
		t.Fatal("the resumed file differs")
	}
	if last := h.ranges[len(h.ranges)-1]; last != "bytes=10000-" {
		t.Errorf("the second download asked for %q, want bytes=10000-", h.ranges)
	}

	h2 := newFakeHub(t, "org/tiny", folderFiles())
	h2.corrupt = "model.safetensors"
	cache2 := t.TempDir()
	_, err = Download(context.Background(), Ref{Repo: "org/tiny"}, h2.options(cache2))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt weights: %v", err)
	}
	blobs, _ := os.ReadDir(filepath.Join(cache2, "models--org--tiny", "blobs"))
	for _, b := range blobs {
		if st, _ := os.Stat(filepath.Join(cache2, "models--org--tiny", "blobs", b.Name())); st.Size() == int64(len(files["model.safetensors"])) {
			t.Errorf("the corrupt download was kept as %s", b.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(cache2, "models--org--tiny", "snapshots", h2.commit, "model.safetensors")); err == nil {
		t.Error("the corrupt weights are linked into the snapshot")
	}
}

// A repository of GGUF files: the quantization named after the colon is chosen, Q4_K_M when
// none is named, as llama-server's -hf chooses; one that matches nothing is an error naming
// the files.
func TestDownloadGGUFChoosesTheQuantization(t *testing.T) {
	files := map[string][]byte{"README.md": []byte("x"), "tiny-Q4_K_M.gguf": []byte("GGUF q4"), "tiny-Q8_0.gguf": []byte("GGUF q8"),
		"mmproj-tiny-Q4_K_M.gguf": []byte("GGUF proj")}
	h := newFakeHub(t, "org/tiny-GGUF", files)
	cache := t.TempDir()
	for quant, want := range map[string]string{"": "tiny-Q4_K_M.gguf", "q8_0": "tiny-Q8_0.gguf"} {
		got, err := Download(context.Background(), Ref{Repo: "org/tiny-GGUF", Quant: quant}, h.options(cache))
		if err != nil || filepath.Base(got) != want {
			t.Fatalf("quant %q: %s, %v; want %s", quant, got, err, want)
		}
	}
	if _, err := Download(context.Background(), Ref{Repo: "org/tiny-GGUF", Quant: "IQ2_XS"}, h.options(cache)); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "tiny-Q8_0.gguf") {
		t.Fatalf("a quantization the repository lacks: %v", err)
	}
	if _, err := Download(context.Background(), Ref{Repo: "org/none"}, h.options(cache)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a repository the Hub lacks: %v", err)
	}
}

// A revision that would name a file outside the cache's refs/ is refused before any request.
func TestDownloadRefusesRevisionPaths(t *testing.T) {
	for _, rev := range []string{"../../x", "/etc/passwd", "main/../../y"} {
		_, err := Download(context.Background(), Ref{Repo: "org/tiny"}, Options{Endpoint: "http://127.0.0.1:1", CacheDir: t.TempDir(), Revision: rev})
		if err == nil || !strings.Contains(err.Error(), "revision") {
			t.Errorf("revision %q: %v", rev, err)
		}
	}
}

func TestParseRef(t *testing.T) {
	for s, want := range map[string]Ref{
		"Qwen/Qwen2.5-1.5B-Instruct":                  {Repo: "Qwen/Qwen2.5-1.5B-Instruct"},
		"bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M": {Repo: "bartowski/Llama-3.2-1B-Instruct-GGUF", Quant: "Q4_K_M"},
	} {
		if got, ok := ParseRef(s); !ok || got != want {
			t.Errorf("%q: %+v %v", s, got, ok)
		}
	}
	for _, s := range []string{"model.gguf", "./org/name", "/abs/path", "org/name/extra", "../x", "org/..", "org/name:", "org/na me", "C:\\models\\x"} {
		if r, ok := ParseRef(s); ok {
			t.Errorf("%q read as %+v", s, r)
		}
	}
}
