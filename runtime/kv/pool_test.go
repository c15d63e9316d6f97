package kv

import (
	"errors"
	"testing"
)

func TestPagePoolReserveTruncateRelease(t *testing.T) {
	p := NewPagePool(4, 8)
	s := p.NewSequence()
	if c, err := s.Reserve(17); err != nil || len(c) != 0 {
		t.Fatalf("reserve 17: copies %v, err %v", c, err)
	}
	if p.InUse() != 3 || len(s.Pages()) != 3 {
		t.Fatalf("17 tokens of 8 per page: %d pages in use, %d in the table", p.InUse(), len(s.Pages()))
	}
	s.Commit(17)
	s.Truncate(9)
	if p.InUse() != 2 || s.Len() != 9 {
		t.Fatalf("after truncate to 9: %d pages, len %d", p.InUse(), s.Len())
	}
	s.Release()
	if p.InUse() != 0 || p.Free() != 4 {
		t.Fatalf("after release: %d in use, %d free", p.InUse(), p.Free())
	}
}

func TestPagePoolExhaustedLeavesStateUnchanged(t *testing.T) {
	p := NewPagePool(2, 4)
	s := p.NewSequence()
	if _, err := s.Reserve(8); err != nil {
		t.Fatal(err)
	}
	s.Commit(8)
	_, err := s.Reserve(9)
	if !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("want ErrPoolExhausted, got %v", err)
	}
	if p.InUse() != 2 || len(s.Pages()) != 2 || s.Len() != 8 {
		t.Fatalf("a failed reserve changed the state: %d in use, %d pages, len %d", p.InUse(), len(s.Pages()), s.Len())
	}
}

func TestForkSharesPagesAndCopiesOnWrite(t *testing.T) {
	p := NewPagePool(8, 4)
	a := p.NewSequence()
	a.Reserve(6) // pages 0, 1 (slots 0..7)
	a.Commit(6)
	b := a.Fork()
	if p.InUse() != 2 {
		t.Fatalf("fork allocated pages: %d in use", p.InUse())
	}
	// b appends at slot 6, inside the shared second page: that page must be copied.
	copies, err := b.Reserve(7)
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != 1 || copies[0].From != a.Pages()[1] || b.Pages()[1] == a.Pages()[1] || b.Pages()[0] != a.Pages()[0] {
		t.Fatalf("copy-on-write: copies %v, a %v, b %v", copies, a.Pages(), b.Pages())
	}
	b.Commit(7)
	a.Release()
	b.Release()
	if p.InUse() != 0 {
		t.Fatalf("%d pages leaked", p.InUse())
	}
}
