package grammar

import (
	"strconv"
	"strings"
)

// Integer ranges as digit patterns: intRange(lo, hi) matches the decimal integers lo..hi
// written as JSON writes them (no leading zeros, no "-0"). An unbounded side stops at
// maxDigits digits.

const maxDigits = 16

// maxBound is the largest bound a schema's number keeps: 10^maxDigits, past every value of
// maxDigits digits.
const maxBound = 1e16

var digit = byteRange('0', '9')

// intRange matches lo..hi (hasLo/hasHi false: unbounded on that side); nil when empty.
func intRange(lo, hi int64, hasLo, hasHi bool) *node {
	var alts []*node
	// non-negative part
	if !hasHi || hi >= 0 {
		a := int64(0)
		if hasLo && lo > 0 {
			a = lo
		}
		if n := natRange(a, hi, hasHi); n != nil {
			alts = append(alts, n)
		}
	}
	// negative part: -(1 .. ) with magnitudes -min(hi,-1) .. -lo
	if !hasLo || lo < 0 {
		a := int64(1)
		if hasHi && hi < -1 {
			a = -hi
		}
		if n := natRange(a, -lo, hasLo); n != nil {
			alts = append(alts, seq(lit("-"), n))
		}
	}
	if len(alts) == 0 {
		return nil
	}
	return alt(alts...)
}

// natRange matches a..b (b unbounded unless hasB), a >= 0; nil when empty.
func natRange(a, b int64, hasB bool) *node {
	if hasB && a > b {
		return nil
	}
	var alts []*node
	if a == 0 {
		alts = append(alts, lit("0"))
		a = 1
		if hasB && b == 0 {
			return alts[0]
		}
	}
	sa := strconv.FormatInt(a, 10)
	sb := strings.Repeat("9", maxDigits)
	if hasB {
		sb = strconv.FormatInt(b, 10)
	}
	for l := len(sa); l <= len(sb); l++ {
		lo, hi := sa, sb
		if l > len(sa) {
			lo = "1" + strings.Repeat("0", l-1)
		}
		if l < len(sb) {
			hi = strings.Repeat("9", l)
		}
		alts = append(alts, digitsRange(lo, hi))
	}
	return alt(alts...)
}

// digitsRange matches the digit strings of len(lo) from lo to hi (lo <= hi, equal lengths).
func digitsRange(lo, hi string) *node {
	if lo == "" {
		return empty()
	}
	if lo[0] == hi[0] {
		return seq(lit(lo[:1]), digitsRange(lo[1:], hi[1:]))
	}
	n := len(lo) - 1
	nines, zeros := strings.Repeat("9", n), strings.Repeat("0", n)
	var alts []*node
	if lo[1:] == zeros && hi[1:] == nines {
		return seq(byteRange(lo[0], hi[0]), rep(digit, n, n))
	}
	alts = append(alts, seq(lit(lo[:1]), digitsRange(lo[1:], nines)))
	if lo[0]+1 <= hi[0]-1 {
		alts = append(alts, seq(byteRange(lo[0]+1, hi[0]-1), rep(digit, n, n)))
	}
	alts = append(alts, seq(lit(hi[:1]), digitsRange(zeros, hi[1:])))
	return alt(alts...)
}
