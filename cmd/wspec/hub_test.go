package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wspec/wspec/weights/home"
)

// storiesHub answers the Hub's file API (model info, HEAD and GET of resolve/) for one
// repository holding the default model's folder, each file's ETag its sha256.
func storiesHub(t *testing.T, repo string) *httptest.Server {
	dir := filepath.Join(home.Default(), "models", "stories15M")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v (run ./setup.sh)", err)
	}
	commit := strings.Repeat("c0", 20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/api/models/"+repo+"/revision/main":
			var sib []map[string]string
			for _, e := range entries {
				sib = append(sib, map[string]string{"rfilename": e.Name()})
			}
			json.NewEncoder(w).Encode(map[string]any{"sha": commit, "siblings": sib})
		case strings.HasPrefix(p, "/"+repo+"/resolve/"+commit+"/"):
			b, err := os.ReadFile(filepath.Join(dir, filepath.Base(p)))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			sum := sha256.Sum256(b)
			w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
			http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(b))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// `generate --model ORG/NAME`, where no such path exists, fetches the repository from the Hub
// (HF_ENDPOINT, here a local server) into the hub cache and runs it; offline
// (HF_HUB_OFFLINE=1), with the server gone, it finds the same snapshot and gives the same text.
func TestGenerateFromTheHub(t *testing.T) {
	srv := storiesHub(t, "karpathy/stories15M")
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	args := []string{"--model", "karpathy/stories15M", "--max-tokens", "8", "--temperature", "0", "Once upon a time"}
	out, errOut, err := captured(t, func() error { return runGenerate(args) })
	if err != nil || !strings.HasPrefix(out, "Once upon a time") || len(out) < len("Once upon a time")+8 {
		t.Fatalf("from the Hub: %q, %v\n%s", out, err, errOut)
	}
	if _, err := os.Stat(filepath.Join(cache, "models--karpathy--stories15M", "snapshots", strings.Repeat("c0", 20), "model.safetensors")); err != nil {
		t.Fatalf("not in the hub cache: %v", err)
	}
	srv.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	again, errOut, err := captured(t, func() error { return runGenerate(args) })
	if err != nil || again != out {
		t.Fatalf("offline: %q (%v), want %q\n%s", again, err, out, errOut)
	}
	_, _, err = captured(t, func() error {
		return runGenerate([]string{"--model", "karpathy/other", "--max-tokens", "2", "x"})
	})
	if err == nil || !strings.Contains(err.Error(), "karpathy/other") || !strings.Contains(err.Error(), "offline") {
		t.Fatalf("a repository neither cached nor reachable: %v", err)
	}
}
