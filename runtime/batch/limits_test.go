package batch

import "testing"

// A step runs as one block of the smallest height that holds its rows, more rows in blocks
// of ChunkRows; without heights, as one block of its rows.
func TestLimitsBlocks(t *testing.T) {
	l := Limits{BlockRows: []int{1, 2, 3, 5, 9, 16}, ChunkRows: 8}
	for _, c := range []struct{ n, blocks, computed int }{
		{1, 1, 1}, {2, 1, 2}, {4, 1, 5}, {6, 1, 9}, {10, 1, 16}, {16, 1, 16}, {17, 3, 24}, {24, 3, 24}, {25, 4, 32},
	} {
		if b, comp := l.Blocks(c.n); b != c.blocks || comp != c.computed {
			t.Errorf("%d rows: %d blocks computing %d rows, want %d computing %d", c.n, b, comp, c.blocks, c.computed)
		}
	}
	if b, comp := (Limits{}).Blocks(40); b != 1 || comp != 40 {
		t.Errorf("no heights: 40 rows as %d blocks computing %d", b, comp)
	}
}
