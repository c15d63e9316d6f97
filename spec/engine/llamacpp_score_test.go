//go:build oracle

package engine

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Prompt scoring on a real model against llama.cpp: the text of testdata/real/score.txt (the
// first 6000 bytes of docs/speculative.md as it was, about 1500 tokens), cut into windows of scoreWindow tokens, each token's
// log-probability after the ones before it in its window. llama.cpp's CPU backend feeds each
// window one token at a time (testdata/llamacpp_score.mjs); its answer is kept in
// testdata/real/NAME.score.json (WSPEC_REAL_GOLDEN=write runs it again). wspec scores the
// same token ids through the engine's prompt scoring (echo and prompt_logprobs' path), and the
// perplexities must agree within scorePPLTol.

const scoreWindow = 512

// scorePPLTol is the relative perplexity difference allowed per model (measured: SmolLM2
// 104.87 against 105.44, 0.54% apart; Qwen2.5-Coder 0.5B 86.14 against 86.17, 0.03%).
var scorePPLTol = map[string]float64{"smollm2-135m-instruct-q4_1": 0.01, "qwen2.5-coder-0.5b-instruct-q4_k_m": 0.01}

type scoreWindowRun struct {
	Tokens   []int     `json:"tokens"`
	Logprobs []float64 `json:"logprobs"`
}

func TestLlamaCppRealPerplexity(t *testing.T) {
	for _, name := range []string{"smollm2-135m-instruct-q4_1", "qwen2.5-coder-0.5b-instruct-q4_k_m"} {
		t.Run(name, func(t *testing.T) {
			file := realModel(t, name)
			ref := scoreGolden(t, name, file)
			e, err := Load(file, Options{Device: testDevice(t), DType: "f32", KVCacheDType: "f32", MaxModelLen: scoreWindow + 1})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var sumRef, sumGot, worst float64
			n := 0
			for _, w := range ref {
				r, err := e.NewRequest(context.Background(), Prompt{Tokens: w.Tokens}, GenerateOptions{ScoreOnly: true, PromptLogprobs: true})
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Run(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.PromptLogprobs) != len(w.Logprobs) || len(res.Tokens) != 0 {
					t.Fatalf("%d logprobs and %d tokens for %d scored", len(res.PromptLogprobs), len(res.Tokens), len(w.Logprobs))
				}
				for i, lp := range res.PromptLogprobs {
					sumRef += w.Logprobs[i]
					sumGot += float64(lp.Logprob)
					worst = max(worst, math.Abs(w.Logprobs[i]-float64(lp.Logprob)))
					n++
				}
			}
			pplRef, pplGot := math.Exp(-sumRef/float64(n)), math.Exp(-sumGot/float64(n))
			rel := math.Abs(pplGot/pplRef - 1)
			t.Logf("%s: %d tokens in %d windows: perplexity %.4f, llama.cpp %.4f (%.2f%% apart); largest token difference %.3g",
				name, n, len(ref), pplGot, pplRef, 100*rel, worst)
			if rel > scorePPLTol[name] {
				t.Errorf("perplexity %.4f against llama.cpp's %.4f: %.2f%% apart, at most %.2f%%", pplGot, pplRef, 100*rel, 100*scorePPLTol[name])
			}
		})
	}
}

// scoreGolden is llama.cpp's scoring of score.txt on file, read from testdata/real, or with
// WSPEC_REAL_GOLDEN=write computed and written there.
func scoreGolden(t *testing.T, name, file string) []scoreWindowRun {
	path := filepath.Join("testdata", "real", name+".score.json")
	if os.Getenv("WSPEC_REAL_GOLDEN") == "write" {
		text, err := os.ReadFile(filepath.Join("testdata", "real", "score.txt"))
		if err != nil {
			t.Fatal(err)
		}
		oracle := nodeOracle(t)
		script, err := os.ReadFile("testdata/llamacpp_score.mjs")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(oracle, "llamacpp_score.mjs"), script, 0o644); err != nil {
			t.Fatal(err)
		}
		req, _ := json.Marshal(map[string]any{"model": file, "text": string(text), "window": scoreWindow})
		reqFile := filepath.Join(t.TempDir(), "request.json")
		if err := os.WriteFile(reqFile, req, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("node", filepath.Join(oracle, "llamacpp_score.mjs"), reqFile)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("llama.cpp on %s: %v", file, err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Windows []scoreWindowRun `json:"windows"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res.Windows
}
