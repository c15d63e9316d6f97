// Package tokenizer reads the tokenizers of Hugging Face model folders (tokenizer.json, and
// tokenizer_config.json for BOS, EOS and add_bos_token) of the two BPE kinds the supported
// models use: byte-level (GPT-2, Llama 3, Qwen; with its pre-tokenizer regex and the NFC
// normalizer Qwen declares) and SentencePiece-style with byte fallback (Llama 2, Mistral,
// TinyLlama). It encodes text to token ids, decodes ids to text, and decodes a stream of ids
// as text arrives (StreamDecoder: never half a UTF-8 character). Package weights builds one
// from a GGUF file's metadata through Parse.
package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Errors. Every error this package returns for bad input wraps one of these (test with
// errors.Is), with a message naming the file and field at fault.
var (
	// ErrBad: a tokenizer.json or tokenizer_config.json that is malformed.
	ErrBad = errors.New("tokenizer: bad tokenizer")
	// ErrUnsupported: a tokenizer feature this package does not implement (a Unigram model,
	// a pre-tokenizer split behaviour, ...).
	ErrUnsupported = errors.New("tokenizer: unsupported feature")
)

// Tokenizer file names in a Hugging Face model folder.
const (
	FileName       = "tokenizer.json"
	ConfigFileName = "tokenizer_config.json"
)

// Kind is the flavour of BPE a tokenizer.json describes.
type Kind int

const (
	// SentencePieceBPE: Llama-2 style. Spaces become "▁", a "▁" is prepended,
	// the whole text is one BPE word, and characters missing from the
	// vocabulary fall back to byte tokens "<0x00>".."<0xFF>".
	SentencePieceBPE Kind = iota + 1
	// ByteLevelBPE: GPT-2 / Llama-3 / Qwen2 style. The text is split by a
	// regex and each piece's UTF-8 bytes are mapped to printable characters.
	ByteLevelBPE
)

func (k Kind) String() string {
	switch k {
	case SentencePieceBPE:
		return "SentencePieceBPE"
	case ByteLevelBPE:
		return "ByteLevelBPE"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// maxVocab bounds token ids so that a hostile file cannot demand a huge table.
const maxVocab = 1 << 24

// Tokenizer encodes text to token ids and back. It is safe for concurrent use.
type Tokenizer struct {
	kind   Kind
	pieces []string // id -> token text as in tokenizer.json ("" for holes)
	// maxPiece is MaxPieceBytes, computed once.
	maxPiece     int
	maxPieceOnce sync.Once
	ids          map[string]int // model vocabulary: text -> id
	merges       map[uint64]bpeMerge
	added        []addedToken // matched literally before BPE, longest first
	addedFirst   [256]bool    // first bytes of added tokens
	decoded      [][]byte     // id -> bytes Decode emits (nil for special tokens)
	isByte       []bool       // id is a SentencePiece byte-fallback token
	special      []bool       // id is a special added token
	unk          int          // -1 when none
	nfc          bool         // segments are NFC-normalized before BPE (the NFC normalizer)

	// SentencePieceBPE
	byteFallback bool
	byteIDs      [256]int // "<0xXX>" ids, -1 when missing
	spaceToMeta  bool
	dummyPrefix  bool

	// ByteLevelBPE
	split        splitChain // the pre-tokenizer's Splits in order (none: the text is one piece)
	prefixSpace  bool
	byteRuneIDs  [256]int // id of each byte's mapped character, -1 when missing
	ignoreMerges bool     // a whole pre-tokenized word in the vocabulary is one token (Llama-3)

	bos    int
	eos    []int
	addBOS bool
}

type addedToken struct {
	content string
	id      int
}

// Load reads dir/tokenizer.json (a BPE model, SentencePiece-style
// with byte fallback or byte-level) and, when present, dir/tokenizer_config.json
// for bos_token, eos_token and add_bos_token. Where tokenizer_config.json does
// not say: a SentencePiece tokenizer takes "<s>"/"</s>" as BOS/EOS and adds
// BOS; a byte-level one takes the token a TemplateProcessing post-processor
// puts first as BOS (and adds it), else has none, and "<|endoftext|>" as EOS
// when present.
//
// Approximations, documented where they are made: added tokens are matched in
// the raw text regardless of their lstrip/rstrip/single_word/normalized flags;
// the Metaspace "split" flag is ignored (the whole text is one BPE word).
func Load(dir string) (*Tokenizer, error) {
	path := filepath.Join(dir, FileName)
	tj, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cpath := filepath.Join(dir, ConfigFileName)
	tc, err := os.ReadFile(cpath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	t, err := Parse(tj, tc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from tokenizer.json and (optional, nil)
// tokenizer_config.json bytes.
func Parse(tokJSON, cfgJSON []byte) (*Tokenizer, error) {
	var j tokenizerJSON
	if err := json.Unmarshal(tokJSON, &j); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBad, FileName, err)
	}
	m := &j.Model
	if m.Type != "BPE" && !(m.Type == "" && len(m.Merges) > 0) {
		return nil, fmt.Errorf("%w: tokenizer model %q (only BPE)", ErrUnsupported, m.Type)
	}
	if (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") || (m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") {
		return nil, fmt.Errorf("%w: BPE with continuing_subword_prefix or end_of_word_suffix", ErrUnsupported)
	}
	var p pipeline
	if err := p.normalizer(j.Normalizer); err != nil {
		return nil, err
	}
	if err := p.preTokenizer(j.PreTokenizer); err != nil {
		return nil, err
	}
	t := &Tokenizer{ids: make(map[string]int, len(m.Vocab)), unk: -1, bos: -1, byteFallback: m.ByteFallback}
	switch {
	case p.byteLevel:
		t.kind = ByteLevelBPE
	case m.ByteFallback || p.spaceToMeta || p.dummyPrefix:
		t.kind = SentencePieceBPE
	default:
		return nil, fmt.Errorf("%w: BPE that is neither byte-level nor SentencePiece-style (no ByteLevel pre-tokenizer, no byte_fallback, no \"▁\" handling)", ErrUnsupported)
	}
	if err := t.buildVocab(m.Vocab, j.AddedTokens); err != nil {
		return nil, err
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	if err := t.buildMerges(merges); err != nil {
		return nil, err
	}
	if m.UnkToken != nil && *m.UnkToken != "" {
		id, ok := t.ids[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("%w: unk_token %q is not in the vocabulary", ErrBad, *m.UnkToken)
		}
		t.unk = id
	}
	for _, sp := range p.splits {
		s, err := newSplitter(sp.pattern, sp.behavior)
		if err != nil {
			return nil, err
		}
		t.split = append(t.split, s)
	}
	if t.kind == ByteLevelBPE {
		t.prefixSpace = p.prefixSpace
	} else {
		t.spaceToMeta, t.dummyPrefix = p.spaceToMeta, p.dummyPrefix
	}
	t.buildDecoded()
	t.nfc = p.nfc
	t.ignoreMerges = m.IgnoreMerges
	if err := t.applyTokenizerConfig(cfgJSON, j.PostProcessor.templateBOS()); err != nil {
		return nil, err
	}
	return t, nil
}

// buildVocab fills pieces, ids, the added tokens and the byte tables.
func (t *Tokenizer) buildVocab(vocab map[string]int, added []addedTokenJSON) error {
	size := 0
	for piece, id := range vocab {
		if id < 0 || id >= maxVocab {
			return fmt.Errorf("%w: token %q has id %d outside 0..%d", ErrBad, piece, id, maxVocab-1)
		}
		size = max(size, id+1)
	}
	for _, a := range added {
		if a.ID < 0 || a.ID >= maxVocab {
			return fmt.Errorf("%w: added token %q has id %d outside 0..%d", ErrBad, a.Content, a.ID, maxVocab-1)
		}
		if a.Content == "" {
			return fmt.Errorf("%w: added token %d is empty", ErrBad, a.ID)
		}
		size = max(size, a.ID+1)
	}
	t.pieces = make([]string, size)
	have := make([]bool, size)
	for piece, id := range vocab {
		if have[id] {
			return fmt.Errorf("%w: id %d is given to both %q and %q", ErrBad, id, t.pieces[id], piece)
		}
		have[id] = true
		t.pieces[id] = piece
		t.ids[piece] = id
	}
	special := make([]bool, size)
	for _, a := range added {
		if !have[a.ID] {
			have[a.ID] = true
			t.pieces[a.ID] = a.Content
		}
		special[a.ID] = special[a.ID] || a.Special
		t.added = append(t.added, addedToken{a.Content, a.ID})
		t.addedFirst[a.Content[0]] = true
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	t.isByte = make([]bool, size)
	for b := range 256 {
		t.byteIDs[b], t.byteRuneIDs[b] = -1, -1
		if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok && t.kind == SentencePieceBPE {
			t.byteIDs[b] = id
			t.isByte[id] = true
		}
		if id, ok := t.ids[string(byteToRune[b])]; ok {
			t.byteRuneIDs[b] = id
		}
	}
	for id, sp := range special {
		if sp {
			t.isByte[id] = false
		}
	}
	t.special = special
	return nil
}

// buildDecoded computes the bytes each id decodes to.
func (t *Tokenizer) buildDecoded() {
	t.decoded = make([][]byte, len(t.pieces))
	for id, piece := range t.pieces {
		switch {
		case t.special[id]: // decodes to nothing
		case t.isByte[id]:
			var b byte
			fmt.Sscanf(piece, "<0x%02X>", &b)
			t.decoded[id] = []byte{b}
		case t.kind == SentencePieceBPE:
			t.decoded[id] = []byte(strings.ReplaceAll(piece, metaspace, " "))
		default:
			t.decoded[id] = byteLevelDecode(piece)
		}
	}
	// Added tokens that are not special and not in the model vocabulary
	// decode to their literal content.
	for _, a := range t.added {
		if _, inVocab := t.ids[a.content]; !inVocab && !t.special[a.id] {
			t.decoded[a.id] = []byte(a.content)
		}
	}
}

// applyTokenizerConfig sets bos, eos and addBOS. templateBOS is the token the
// post-processor puts first ("" for none): it is the default BOS, added by
// default.
func (t *Tokenizer) applyTokenizerConfig(cfgJSON []byte, templateBOS string) error {
	var c tokenizerConfigJSON
	if cfgJSON != nil {
		if err := json.Unmarshal(cfgJSON, &c); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBad, ConfigFileName, err)
		}
	}
	bosName, eosName := "", "<|endoftext|>"
	if t.kind == SentencePieceBPE {
		bosName, eosName = "<s>", "</s>"
		t.addBOS = true
	}
	if _, ok := t.TokenID(templateBOS); ok && templateBOS != "" {
		bosName = templateBOS
		t.addBOS = true
	}
	// lookup resolves a token field: absent -> def when it exists, null -> -1.
	lookup := func(field string, raw json.RawMessage, def string) (int, error) {
		if len(bytes.TrimSpace(raw)) == 0 {
			if id, found := t.TokenID(def); found && def != "" {
				return id, nil
			}
			return -1, nil
		}
		name, ok, err := tokenContent(field, raw)
		if err != nil || !ok {
			return -1, err
		}
		id, found := t.TokenID(name)
		if !found {
			return -1, fmt.Errorf("%w: %s %s %q is not a token", ErrBad, ConfigFileName, field, name)
		}
		return id, nil
	}
	var err error
	if t.bos, err = lookup("bos_token", c.BOSToken, bosName); err != nil {
		return err
	}
	eos, err := lookup("eos_token", c.EOSToken, eosName)
	if err != nil {
		return err
	}
	if eos >= 0 {
		t.eos = []int{eos}
	}
	if c.AddBOSToken != nil {
		t.addBOS = *c.AddBOSToken
	}
	return nil
}

// TokenID is the id of a token given by its text as tokenizer.json spells it
// (a vocabulary entry or an added token).
func (t *Tokenizer) TokenID(piece string) (int, bool) {
	if id, ok := t.ids[piece]; ok {
		return id, true
	}
	for _, a := range t.added {
		if a.content == piece {
			return a.id, true
		}
	}
	return -1, false
}

// MaxPieceBytes bounds the bytes of text one token stands for: its piece's bytes (which spell
// a byte of text in one or more), times 4 for what normalizing the text (NFC) may shorten.
func (t *Tokenizer) MaxPieceBytes() int {
	t.maxPieceOnce.Do(func() {
		t.maxPiece = 1
		for _, p := range t.pieces {
			t.maxPiece = max(t.maxPiece, len(p))
		}
		t.maxPiece *= 4
	})
	return t.maxPiece
}

// DummyPrefix reports whether a SentencePiece tokenizer prepends "▁" to the text.
func (t *Tokenizer) DummyPrefix() bool { return t.dummyPrefix }

// Kind is the BPE flavour.
func (t *Tokenizer) Kind() Kind { return t.kind }

// BOS is the beginning-of-sequence id, or -1 when there is none.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS are the end-of-sequence ids from tokenizer_config.json (the model's
// Config.EOS, from generation_config.json, may list more).
func (t *Tokenizer) EOS() []int { return append([]int(nil), t.eos...) }

// AddBOS reports whether the tokenizer adds BOS by default (add_bos_token).
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.pieces) }

// Piece is the token's text as tokenizer.json spells it ("▁the", "<0x0A>",
// "Ġthe", "<s>"), or "" for an id outside the vocabulary.
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// IsAdded reports whether id is an added token (tokenizer.json's added_tokens), special or not.
func (t *Tokenizer) IsAdded(id int) bool {
	for _, a := range t.added {
		if a.id == id {
			return true
		}
	}
	return false
}

// IsSpecial reports whether id is a special added token (which Decode skips).
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.special) && t.special[id]
}

// TokenBytes is the text token id adds to a stream's output (StreamDecoder without
// KeepSpecial, past its first piece): nil for special tokens and ids outside the vocabulary.
// Structured outputs match grammars against these bytes. Read only.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.decoded) {
		return nil
	}
	return t.decoded[id]
}
