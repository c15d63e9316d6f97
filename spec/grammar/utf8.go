package grammar

import "unicode/utf8"

// runeRange is the UTF-8 encodings of the runes lo..hi (surrogates excluded) as byte ranges:
// an alternative of sequences, one byte range per encoded byte.
func runeRange(lo, hi rune) *node {
	var alts []*node
	for _, s := range utf8Seqs(lo, hi, nil) {
		kids := make([]*node, len(s))
		for i, r := range s {
			kids[i] = byteRange(r[0], r[1])
		}
		alts = append(alts, seq(kids...))
	}
	if len(alts) == 0 {
		return nil
	}
	return alt(alts...)
}

// utf8Seqs appends to out the byte-range sequences encoding lo..hi: the range is split until
// each part's encodings differ in their last bytes only by whole ranges.
func utf8Seqs(lo, hi rune, out [][][2]byte) [][][2]byte {
	if lo > hi || lo > utf8.MaxRune {
		return out
	}
	hi = min(hi, utf8.MaxRune)
	if lo < 0xD800 && hi >= 0xD800 || lo <= 0xDFFF && hi > 0xDFFF || lo >= 0xD800 && hi <= 0xDFFF { // surrogates
		out = utf8Seqs(lo, min(hi, 0xD7FF), out)
		return utf8Seqs(max(lo, 0xE000), hi, out)
	}
	for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} { // encoded lengths differ
		if lo <= b && hi > b {
			out = utf8Seqs(lo, b, out)
			return utf8Seqs(b+1, hi, out)
		}
	}
	if hi < 0x80 {
		return append(out, [][2]byte{{byte(lo), byte(hi)}})
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				out = utf8Seqs(lo, lo|m, out)
				return utf8Seqs((lo|m)+1, hi, out)
			}
			if hi&m != m {
				out = utf8Seqs(lo, (hi&^m)-1, out)
				return utf8Seqs(hi&^m, hi, out)
			}
		}
	}
	var a, b [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	s := make([][2]byte, n)
	for i := range s {
		s[i] = [2]byte{a[i], b[i]}
	}
	return append(out, s)
}

// runeClass is the alternative of the rune ranges (pairs lo, hi, as regexp/syntax lists
// them), nil when empty.
func runeClass(ranges []rune) *node {
	var alts []*node
	for i := 0; i+1 < len(ranges); i += 2 {
		if n := runeRange(ranges[i], ranges[i+1]); n != nil {
			alts = append(alts, n)
		}
	}
	if len(alts) == 0 {
		return nil
	}
	return alt(alts...)
}
