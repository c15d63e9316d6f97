//go:build oracle

package engine

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/home"
)

// Real trained models (cmd/wspec/scripts/fetch-real-models.sh fetches them from packages of
// the Python package registry; docs/models.md says what each holds): each GGUF file as people
// download it, through wspec, against what llama.cpp's Vulkan backend (told to multiply in
// f32, as wspec does) gave on the same file: a prompt of English prose, one of German and one
// of code, 48 greedy tokens each with their top-20 log-probabilities. llama.cpp's answers are
// kept in testdata/real (on lavapipe it takes minutes a model);
// WSPEC_REAL_GOLDEN=write runs it again and rewrites them.

const realTokens = 48

var realPrompts = []string{
	"The history of the city of Paris begins",
	"Der schnellste Weg von Berlin nach München ist",
	"def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
}

var realModels = []string{"smollm2-135m-instruct-q4_1", "gemma-3-270m-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m"}

// realModel is the named file, fetched by the script when it is missing.
func realModel(t *testing.T, name string) string {
	file := filepath.Join(home.Default(), "models", "real", name+".gguf")
	if _, err := os.Stat(file); err != nil {
		cmd := exec.Command("bash", "cmd/wspec/scripts/fetch-real-models.sh", name)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), home.Env+"="+home.Default())
		if out, err := cmd.CombinedOutput(); err != nil {
			msg := "fetch-real-models.sh " + name + ": " + err.Error() + ": " + string(out)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED, NOT PASSED: the real models need the Python package registry: " + msg)
		}
	}
	return file
}

// realGolden is llama.cpp's answer on the file, read from testdata/real, or with
// WSPEC_REAL_GOLDEN=write computed and written there.
func realGolden(t *testing.T, name, file string) []oracleRun {
	path := filepath.Join("testdata", "real", name+".json")
	if os.Getenv("WSPEC_REAL_GOLDEN") == "write" {
		ref := llamaCppPrompts(t, nodeOracle(t), file, realPrompts, realTokens, true)
		b, err := json.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref []oracleRun
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// realTol bounds each model's top-20 log-probability differences from llama.cpp's (measured on
// the three prompts: SmolLM2 0.003-0.008, Qwen2.5-Coder 0.5B 0.08-0.16 and 1.5B 0.20-0.27,
// Gemma 3 0.14-0.25. On random weights in the same types the two agree within 0.06; why real
// Qwen and Gemma files differ more is not known yet: their large activations are a guess,
// not a finding). A greedy token may
// differ where llama.cpp's top two were closer than twice the tolerance (a near-tie at the
// two programs' rounding); after it the sequences part, so at least realCompared steps must be
// compared.
var realTol = map[string]float64{"smollm2-135m-instruct-q4_1": 0.02, "gemma-3-270m-q4_k_m": 0.35,
	"qwen2.5-coder-0.5b-instruct-q4_k_m": 0.25, "qwen2.5-coder-1.5b-instruct-q4_k_m": 0.35}

const realCompared = 16

func TestLlamaCppRealModels(t *testing.T) {
	for _, name := range realModels {
		t.Run(name, func(t *testing.T) {
			file := realModel(t, name)
			cfg, err := weights.ModelConfig(file)
			if err != nil {
				t.Fatal(err)
			}
			ref := realGolden(t, name, file)
			got := wspecPrompts(t, file, realPrompts, realTokens, 512)
			tol := realTol[name]
			for i := range ref {
				steps, worst := realAgreement(ref[i], got[i], cfg.EOS, tol)
				t.Logf("%s %q: %d of %d greedy tokens equal, largest top-%d log-probability difference %.3g",
					name, ref[i].Prompt, steps, realTokens, oracleTopK, worst)
				if worst > tol || steps < realCompared {
					t.Errorf("%q: wspec parts from llama.cpp after %d tokens (log-probabilities differ by %.3g, at most %.3g)\nllama.cpp %v\nwspec     %v",
						ref[i].Prompt, steps, worst, tol, tokensOf(ref[i]), tokensOf(got[i]))
				}
			}
		})
	}
}

// realAgreement is agreement with near-ties as wide as twice tol: a divergence where llama.cpp's
// top two were closer is reported (its step) and allowed.
func realAgreement(ref, got oracleRun, eos []int, tol float64) (int, float64) {
	steps, worst := agreement(ref, got, eos)
	if math.IsInf(worst, 1) && steps < len(ref.Steps) && steps < len(got.Steps) && len(ref.Steps[steps].Top) > 1 {
		if gap := ref.Steps[steps].Top[0][1] - ref.Steps[steps].Top[1][1]; gap <= 2*tol {
			cut := ref
			cut.Steps = ref.Steps[:steps]
			_, worst = agreement(cut, got, eos)
		}
	}
	return steps, worst
}
