//go:build !js

package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/grammar"
)

// generate()'s options: `wspec generate`'s defaults, vLLM's names, top_p 0 as the likeliest
// token alone, and every mistake an error naming it.
func TestGenerateOptions(t *testing.T) {
	o, err := generateOptions("")
	if err != nil || o.MaxTokens != 256 || o.Temperature != 0 || o.TopP != 1 || o.RepetitionPenalty != 1 || o.Seed != 0 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = generateOptions(`{"max_tokens": 8, "temperature": 0.7, "top_p": 0, "seed": 3, "stop": ["."], "speculative": {"fixed": true}, "repetition_penalty": 1.2}`)
	if err != nil || o.MaxTokens != 8 || o.Temperature != 0.7 || o.TopP != engine.SmallestTopP || o.Seed != 3 ||
		len(o.Stop) != 1 || !o.FixedSpeculation || o.RepetitionPenalty != 1.2 {
		t.Fatalf("set: %+v, %v", o, err)
	}
	o, err = generateOptions(`{"structured_outputs": {"json": {"type": "object"}}}`)
	if err != nil || o.Structured == nil || o.Structured.Kind != grammar.JSONSchema || o.Structured.Text != `{"type": "object"}` {
		t.Fatalf("structured_outputs json: %+v, %v", o.Structured, err)
	}
	o, err = generateOptions(`{"structured_outputs": {"choice": ["yes", "no"]}}`)
	if err != nil || o.Structured == nil || o.Structured.Kind != grammar.Choice || len(o.Structured.Choices) != 2 {
		t.Fatalf("structured_outputs choice: %+v, %v", o.Structured, err)
	}
	for in, want := range map[string]string{
		`{"structured_outputs": {"regex": "a", "choice": ["a"]}}`: "structured_outputs",
		`{"structured_outputs": {"choice": []}}`:                  "structured_outputs",
		`{"structured_outputs": {"jsn": {}}}`:                     "jsn",
		`{"max_token": 8}`:                                        "max_token",
		`{"temperature": -1}`:                                     "temperature",
		`{"top_p": 2}`:                                            "top_p",
		`{"max_tokens": "eight"}`:                                 "max_tokens",
		`{} {}`:                                                   "after the JSON",
	} {
		_, err := generateOptions(in)
		var inv *engine.InvalidError
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", in, err, want)
		} else if strings.Contains(in, "-1") && !errors.As(err, &inv) {
			t.Errorf("%s: %v is not the engine's InvalidError", in, err)
		}
	}
}

// Each of engine.SamplingParams is a generate() option by its name; a string is an error
// naming it, null its default.
func TestGenerateSamplingParams(t *testing.T) {
	for i := range engine.SamplingParams {
		p := &engine.SamplingParams[i]
		o, err := generateOptions(fmt.Sprintf(`{%q: %v}`, p.Name, p.Example))
		want := engine.DefaultSampling()
		p.Set(&want, p.Example)
		if err != nil || fmt.Sprint(o.Sampling) != fmt.Sprint(want) {
			t.Errorf("%s %v: %+v, want %+v (%v)", p.Name, p.Example, o.Sampling, want, err)
		}
		if o, err := generateOptions(fmt.Sprintf(`{%q: null}`, p.Name)); err != nil || fmt.Sprint(o.Sampling) != fmt.Sprint(engine.DefaultSampling()) {
			t.Errorf("%s null: %+v (%v)", p.Name, o.Sampling, err)
		}
		if _, err := generateOptions(fmt.Sprintf(`{%q: "x"}`, p.Name)); err == nil || !strings.Contains(err.Error(), p.Name) {
			t.Errorf("%s \"x\": %v", p.Name, err)
		}
	}
}

// The site: the page and its scripts, the wasm as application/wasm, the model's files and
// files.json, its drafters under drafters/<mode>, and nothing else.
func TestSiteHandler(t *testing.T) {
	dir := t.TempDir()
	write := func(path, s string) string {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := Site{Wasm: write("build/wspec.wasm", "\x00asm"), WasmExec: write("build/wasm_exec.js", "// go"),
		Model: filepath.Join(dir, "tiny"), Drafters: map[string]string{"eagle": filepath.Join(dir, "eagle")}}
	write("tiny/config.json", "{}")
	write("tiny/model.safetensors", "weights")
	write("tiny/.hidden", "x")
	write("eagle/config.json", `{"eagle": true}`)
	h, err := s.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string, string) {
		r, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, r.Header.Get("Content-Type"), string(b)
	}
	for path, want := range map[string]string{
		"/":                              "<title>wspec",
		"/wspec.js":                      "export async function load",
		"/fs.js":                         "class MemFS",
		"/wasm_exec.js":                  "// go",
		"/models/tiny/model.safetensors": "weights",
		"/models/tiny/drafters/eagle/config.json": `{"eagle": true}`,
	} {
		if code, _, body := get(path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.80q, want %q", path, code, body, want)
		}
	}
	if code, ct, _ := get("/wspec.wasm"); code != 200 || ct != "application/wasm" {
		t.Errorf("GET /wspec.wasm: %d %s", code, ct)
	}
	var files []folderFile
	if _, _, body := get("/models/tiny/files.json"); json.Unmarshal([]byte(body), &files) != nil || len(files) != 2 ||
		files[0].Name != "config.json" || files[1].Name != "model.safetensors" || files[1].Size != 7 || files[1].Version == "" {
		t.Errorf("files.json: %s", body)
	}
	var index struct {
		Models []struct {
			Name, URL string
			Drafters  []string
		}
	}
	if _, _, body := get("/models/index.json"); json.Unmarshal([]byte(body), &index) != nil || len(index.Models) != 1 ||
		index.Models[0].URL != "/models/tiny" || strings.Join(index.Models[0].Drafters, ",") != "eagle" {
		t.Errorf("index.json: %s", body)
	}
	for _, path := range []string{"/models/tiny/.hidden", "/models/tiny/drafters/medusa/config.json", "/models/other/config.json", "/models/tiny/../build/wspec.wasm"} {
		if code, _, _ := get(path); code != 404 {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
	s.Wasm = filepath.Join(dir, "missing.wasm")
	if _, err := s.Handler(); err == nil || !strings.Contains(err.Error(), "missing.wasm") {
		t.Errorf("a missing wasm: %v", err)
	}
}
