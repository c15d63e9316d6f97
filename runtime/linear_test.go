package runtime

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// blockedF16Bytes must lay out exactly what blocked does, as little-endian bytes, on awkward
// shapes: k not a multiple of a group (8), rows not a multiple of a block; and its padding must
// be zeros when the buffer it reuses held something else.
func TestBlockedF16Bytes(t *testing.T) {
	for _, shape := range [][2]int{{1, 1}, {3, 5}, {8, 4}, {9, 7}, {17, 12}, {16, 33}, {8, 16}, {2, 23}} {
		rows, k := shape[0], shape[1]
		h := make([]uint16, rows*k)
		for i := range h {
			h[i] = uint16(i*2654435761>>7) | 1 // no zeros, so that a value left out shows
		}
		want, raw := new(bytes.Buffer), new(bytes.Buffer)
		for _, v := range blocked(h, rows, k, 8) {
			binary.Write(want, binary.LittleEndian, v)
		}
		binary.Write(raw, binary.LittleEndian, h)
		dirty := bytes.Repeat([]byte{0xff}, 4096)
		encodeBufs.Put(&dirty)
		if got := blockedF16Bytes(raw.Bytes(), rows, k); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%d x %d: blockedF16Bytes differs from blocked", rows, k)
		}
	}
}
