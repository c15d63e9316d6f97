//go:build !js

package web

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed static
var static embed.FS

// Site is what `wspec web` serves: the page, the engine's WebAssembly and the model files.
type Site struct {
	Wasm     string            // wspec.wasm, built with GOOS=js GOARCH=wasm from cmd/wspec-wasm
	WasmExec string            // the wasm_exec.js of the Go release that built it
	Model    string            // the model folder (or GGUF file) the page offers
	Drafters map[string]string // speculative method -> its drafter's folder, served under the model's drafters/
}

// ModelName is the model's name in the page's URLs (/models/NAME).
func (s Site) ModelName() string { return filepath.Base(s.Model) }

// Handler serves the site: / (the page and its scripts), /wspec.wasm, /wasm_exec.js,
// /models/index.json (the model and its drafters), and /models/NAME/... (a folder's files and
// its files.json, which the page's loader reads to name them).
func (s Site) Handler() (http.Handler, error) {
	for _, f := range []string{s.Wasm, s.WasmExec} {
		if st, err := os.Stat(f); err != nil || st.IsDir() {
			return nil, fmt.Errorf("web: %s is not a file", f)
		}
	}
	if _, err := os.Stat(s.Model); err != nil {
		return nil, fmt.Errorf("web: model %s: %w", s.Model, err)
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /wspec.wasm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/wasm")
		http.ServeFile(w, r, s.Wasm)
	})
	mux.HandleFunc("GET /wasm_exec.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		http.ServeFile(w, r, s.WasmExec)
	})
	mux.HandleFunc("GET /models/index.json", func(w http.ResponseWriter, r *http.Request) {
		modes := make([]string, 0, len(s.Drafters))
		for m := range s.Drafters {
			modes = append(modes, m)
		}
		sort.Strings(modes)
		url := "/models/" + s.ModelName()
		if st, err := os.Stat(s.Model); err == nil && !st.IsDir() {
			url += "/" + s.ModelName() // a GGUF file: the page fetches the file itself
		}
		writeJSON(w, map[string]any{"models": []map[string]any{{"name": s.ModelName(), "url": url, "drafters": modes}}})
	})
	prefix := "/models/" + s.ModelName()
	mux.HandleFunc("GET "+prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		rel := strings.TrimPrefix(r.URL.Path, prefix+"/")
		dir := s.Model
		if rest, ok := strings.CutPrefix(rel, "drafters/"); ok {
			mode, name, _ := strings.Cut(rest, "/")
			if dir, ok = s.Drafters[mode]; !ok {
				http.NotFound(w, r)
				return
			}
			rel = name
		}
		s.serveFolder(w, r, dir, rel)
	})
	return mux, nil
}

// serveFolder serves one file of a folder's top level, or its files.json. A GGUF model is a
// folder of one file.
func (s Site) serveFolder(w http.ResponseWriter, r *http.Request, dir, name string) {
	files, err := listFolder(dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if name == "files.json" {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, files)
		return
	}
	for _, f := range files {
		if f.Name == name {
			http.ServeFile(w, r, f.path)
			return
		}
	}
	http.NotFound(w, r)
}

// folderFile is an entry of files.json: version changes when the file does, so the page's
// cache keeps no stale copy.
type folderFile struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	Version string `json:"version"`
	path    string
}

func listFolder(dir string) ([]folderFile, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() { // a GGUF file
		return []folderFile{{Name: filepath.Base(dir), Size: st.Size(), Version: version(st), path: dir}}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []folderFile
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			if info, err := e.Info(); err == nil {
				out = append(out, folderFile{Name: e.Name(), Size: info.Size(), Version: version(info), path: filepath.Join(dir, e.Name())})
			}
		}
	}
	return out, nil
}

func version(st os.FileInfo) string {
	return fmt.Sprintf("%x-%x", st.Size(), st.ModTime().UnixNano())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
