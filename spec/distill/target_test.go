package distill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/hf2gguf"
)

// A target read from a quantized GGUF file gets the fingerprint the engine computes for the
// same file, so a drafter trained on it is accepted when `wspec serve` loads that file (and
// one trained on the float folder it came from is refused); its prompts render in the chat
// template the server would use.
func TestTargetFromGGUF(t *testing.T) {
	if _, err := os.Stat(storiesDir); err != nil {
		t.Fatalf("stories15M not set up (%v): run ./setup.sh", err)
	}
	file := filepath.Join(t.TempDir(), "stories-q4_1.gguf")
	if err := hf2gguf.Convert(storiesDir, file, hf2gguf.Options{FileType: hf2gguf.FileQ4_1}); err != nil {
		t.Fatal(err)
	}
	tg, err := LoadTarget(file)
	if err != nil {
		t.Fatal(err)
	}
	folder, err := LoadTarget(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	if tg.ID.Fingerprint == folder.ID.Fingerprint {
		t.Fatalf("the Q4_1 file and the float folder share fingerprint %s", tg.ID.Fingerprint)
	}
	m, err := weights.OpenModel(file)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, c := range []struct {
		id   weights.TargetID
		want bool
	}{{tg.ID, true}, {folder.ID, false}} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, weights.ConfigFileName), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := weights.WriteTargetID(dir, c.id); err != nil {
			t.Fatal(err)
		}
		if err := weights.CheckTargetModel(dir, m); (err == nil) != c.want {
			t.Errorf("a drafter trained for %s, loaded beside the GGUF file: %v", c.id.Name, err)
		}
	}
	ps, err := tg.ChatPrompts([]string{"Tell me a story about a cat."})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ps[0], "Tell me a story about a cat.") || ps[0] == "Tell me a story about a cat." {
		t.Errorf("rendered prompt %q: want the message inside the template's markup", ps[0])
	}
	if ids := tg.Encode(ps); len(ids[0]) < 5 || ids[0][0] != tg.Tok.BOS() {
		t.Errorf("encoded prompt %v: want BOS first", ids[0])
	}
}
