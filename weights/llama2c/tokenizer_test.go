package llama2c

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A piece longer than the max_token_length the file declares breaks the format
// (llama2.c sizes its merge buffer by it), and deriving merges costs the square
// of a piece's length: a 1 MiB piece would take minutes. Such a file, or one
// declaring an absurd max_token_length, is refused at once.
func TestTokenizerPieceLengths(t *testing.T) {
	model, good, _ := writeTinyModel(t, false)
	tok, err := ReadTokenizer(good, 300)
	if err != nil {
		t.Fatal(err)
	}
	long := *tok
	long.Pieces = append([][]byte(nil), tok.Pieces...)
	long.Pieces[299] = []byte(strings.Repeat("x", 1<<20))
	long.MaxTokenLength = 1 << 20
	over := *tok
	over.Pieces = append([][]byte(nil), tok.Pieces...)
	over.Pieces[299] = []byte("xxxxxxx") // 7 bytes, max_token_length 6
	for name, bad := range map[string]*Tokenizer{"absurd max_token_length": &long, "piece over max_token_length": &over} {
		start := time.Now()
		err := Convert(model, writeTokenizerBin(t, bad), filepath.Join(t.TempDir(), "out"), false)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "max_token_length") {
			t.Errorf("%s: got %v, want ErrFormat about max_token_length", name, err)
		}
		if d := time.Since(start); d > 2*time.Minute { // a guard against reading 1 MB per piece quadratically, not a timing
			t.Errorf("%s: refused after %v", name, d)
		}
	}
}
