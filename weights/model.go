package weights

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/weights/tokenizer"
)

// Model is a model to load: its configuration, tokenizer and tensors, from a Hugging Face
// folder or a GGUF file, checked against each other (every tensor the configuration needs, in
// its shape; a tokenizer that fits the vocabulary).
type Model struct {
	Config    *Config
	Tokenizer *tokenizer.Tokenizer
	Source    HalfSource
	// ChatTemplate is a GGUF file's tokenizer.chat_template ("" for a folder, whose
	// tokenizer_config.json the server reads).
	ChatTemplate string
	// GGUF says the model is a GGUF file.
	GGUF  bool
	close func() error
}

// Close releases the model's files.
func (m *Model) Close() error {
	if m.close == nil {
		return nil
	}
	err := m.close()
	m.close = nil
	return err
}

// IsGGUF says whether path names a GGUF file (by its name, or its first four bytes).
func IsGGUF(path string) bool {
	if strings.HasSuffix(strings.ToLower(path), ".gguf") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	n, _ := f.Read(magic)
	return n == 4 && string(magic) == gguf.Magic
}

// OpenModel opens a Hugging Face folder (config.json, safetensors, tokenizer.json) or a GGUF
// file.
func OpenModel(path string) (*Model, error) { return openModel(path, true, nil) }

// OpenWeights is OpenModel without a folder's tokenizer (Model.Tokenizer nil): what a draft
// model, which shares the target's, needs. A GGUF file's tokenizer is read all the same.
func OpenWeights(path string) (*Model, error) { return openModel(path, false, nil) }

// OpenDraft is OpenWeights for a draft model of target: its tensor bytes are bounded by what
// the target's configuration allows, so a draft folder whose config.json claims a huge model
// (or a compressed file that would expand to one) is refused before its data is read.
func OpenDraft(path string, target *Config) (*Model, error) {
	b := target.budget(0)
	b.why = "the target's shapes (a draft model is no larger than its target)"
	return openModel(path, false, b)
}

func openModel(path string, withTokenizer bool, most *dataBudget) (*Model, error) {
	if st, err := os.Stat(path); err == nil && !st.IsDir() && IsGGUF(path) {
		return openGGUF(path)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	var tok *tokenizer.Tokenizer
	if withTokenizer {
		if tok, err = tokenizer.Load(path); err != nil {
			return nil, tokenizerErr(err)
		}
	}
	b := cfg.budget(0)
	if most != nil && most.left < b.left {
		b = most
	}
	ck, err := openCheckpointWithin(path, b)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckTensors(ck); err != nil {
		ck.Close()
		return nil, err
	}
	m := &Model{Config: cfg, Tokenizer: tok, Source: ck, close: ck.Close}
	return m, m.checkVocab(path)
}

// openGGUF maps a GGUF file and reads its configuration and tokenizer.
func openGGUF(path string) (*Model, error) {
	b, unmap, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Model, error) {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		return fail(err)
	}
	cfg, err := ggufConfig(f)
	if err != nil {
		return fail(err)
	}
	tok, err := ggufTokenizer(f, cfg.Vocab)
	if err != nil {
		return fail(tokenizerErr(err))
	}
	src := &ggufSource{f: f, c: cfg, mapped: mappedFiles}
	if err := cfg.checkSource(src); err != nil {
		return fail(err)
	}
	tmpl, _ := f.Get("tokenizer.chat_template")
	s, _ := tmpl.(string)
	m := &Model{Config: cfg, Tokenizer: tok, Source: src, ChatTemplate: s, GGUF: true, close: unmap}
	return m, m.checkVocab(path)
}

// checkVocab refuses a tokenizer with more tokens than the model's vocabulary, unless every
// token past the embedding's rows is an added token: real checkpoints ship so (Gemma 3's
// tokenizer has <image_soft_token> at 262144 beside a vocabulary of 262144). Those ids are never
// sampled (the logits stop at the vocabulary), and a prompt holding one is refused.
func (m *Model) checkVocab(path string) error {
	if m.Tokenizer == nil {
		return nil
	}
	for id := m.Config.Vocab; id < m.Tokenizer.VocabSize(); id++ {
		if !m.Tokenizer.IsAdded(id) {
			m.Close()
			return fmt.Errorf("%s: tokenizer has %d tokens but the model's vocabulary is %d (token %d, %q, past the embedding's rows, is not an added token)",
				path, m.Tokenizer.VocabSize(), m.Config.Vocab, id, m.Tokenizer.Piece(id))
		}
	}
	return nil
}

// ModelConfig reads only the configuration of a folder or GGUF file (to check a drafter
// against it before the target's tensors are opened).
func ModelConfig(path string) (*Config, error) {
	if st, err := os.Stat(path); err != nil || st.IsDir() || !IsGGUF(path) {
		return LoadConfig(path)
	}
	b, unmap, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	defer unmap()
	f, err := gguf.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c, err := ggufConfig(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.SlidingLayers = append([]bool(nil), c.SlidingLayers...)
	return c, nil
}

// tokenizerErr makes a tokenizer feature that is not implemented this package's
// ErrUnsupported too, as every other unsupported feature of a checkpoint is.
func tokenizerErr(err error) error {
	if errors.Is(err, tokenizer.ErrUnsupported) && !errors.Is(err, ErrUnsupported) {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return err
}
