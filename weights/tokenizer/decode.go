package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Decode turns ids into text. Special tokens (BOS, EOS, other special added
// tokens) and ids outside the vocabulary give nothing; byte tokens give raw
// bytes, and the result is made valid UTF-8 with U+FFFD standing for each
// byte that is not part of a valid sequence. For the SentencePiece kind, the
// leading space of the first piece, and of any piece right after BOS, is
// dropped (Hugging Face's Strip decoder; llama2.c drops it after BOS), so
// Decode(Encode(s, true)) == s for ordinary text.
//
// Decode(ids) equals the concatenation of a StreamDecoder's outputs for
// [BOS] followed by ids, and its Flush.
func (t *Tokenizer) Decode(ids []int) string {
	d := NewStreamDecoder(t)
	d.afterBOS = true
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.Push(id))
	}
	b.WriteString(d.Flush())
	return b.String()
}

// StreamDecoder turns generated ids into text one at a time, returning only
// complete UTF-8 characters: bytes of a character split over several byte
// tokens are held back until it is complete (or proven invalid, then U+FFFD).
type StreamDecoder struct {
	tok      *Tokenizer
	pending  []byte
	afterBOS bool
	// keep writes special tokens as their strings (they give nothing otherwise), set apart
	// from the text around them by a space with spaces (Hugging Face's decode with
	// skip_special_tokens false and spaces_between_special_tokens true): see KeepSpecial.
	keep, spaces bool
	wrote        bool // some text came out
	afterSpecial bool // the last token was a special one written out
}

// KeepSpecial makes the stream write special tokens as their strings, with a space between
// each and the text around it when spaces is set. Call it before the first Push.
func (d *StreamDecoder) KeepSpecial(spaces bool) { d.keep, d.spaces = true, spaces }

// NewStreamDecoder starts a stream. Unlike Decode, the first piece keeps its
// leading space (it usually continues a prompt); only a piece right after BOS
// loses it, as in llama2.c.
func NewStreamDecoder(tok *Tokenizer) *StreamDecoder {
	return &StreamDecoder{tok: tok}
}

// Push adds one id and returns the text that is now complete (often "").
func (d *StreamDecoder) Push(id int) string {
	out := d.push(id)
	d.wrote = d.wrote || out != ""
	return out
}

func (d *StreamDecoder) push(id int) string {
	t := d.tok
	if d.keep && t.IsSpecial(id) {
		out := d.drain(true) // the text before it is complete
		if d.spaces && (d.wrote || out != "") {
			out += " "
		}
		d.afterBOS, d.afterSpecial = id == t.bos, true
		return out + t.pieces[id]
	}
	if d.afterSpecial && d.spaces && id >= 0 && id < len(t.decoded) && len(t.decoded[id]) > 0 {
		d.pending = append(d.pending, ' ')
	}
	d.afterSpecial = false
	wasBOS := d.afterBOS
	d.afterBOS = id == t.bos && id >= 0
	if id < 0 || id >= len(t.decoded) {
		return d.drain(false)
	}
	b := t.decoded[id]
	if wasBOS && t.kind == SentencePieceBPE && !t.isByte[id] && len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	d.pending = append(d.pending, b...)
	return d.drain(false)
}

// Flush returns what is held back, an incomplete character as U+FFFD per
// byte, and empties the buffer.
func (d *StreamDecoder) Flush() string { return d.drain(true) }

// drain returns the complete characters at the front of pending (all of it
// when final), each invalid byte as U+FFFD.
func (d *StreamDecoder) drain(final bool) string {
	var b strings.Builder
	i := 0
	for i < len(d.pending) {
		rest := d.pending[i:]
		if !final && !utf8.FullRune(rest) {
			break
		}
		r, size := utf8.DecodeRune(rest)
		b.WriteRune(r) // RuneError writes U+FFFD
		i += size
	}
	n := copy(d.pending, d.pending[i:])
	d.pending = d.pending[:n]
	return b.String()
}
