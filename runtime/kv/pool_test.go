package kv

import (
	"errors"
	"testing"
)

func TestPagePoolReserveTruncateRelease(t *testing.T) {
	p := NewPagePool(4, 8)
	s := p.NewSequence()
	if err := s.Reserve(17); err != nil {
		t.Fatalf("reserve 17: %v", err)
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
	if err := s.Reserve(8); err != nil {
		t.Fatal(err)
	}
	s.Commit(8)
	err := s.Reserve(9)
	if !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("want ErrPoolExhausted, got %v", err)
	}
	if p.InUse() != 2 || len(s.Pages()) != 2 || s.Len() != 8 {
		t.Fatalf("a failed reserve changed the state: %d in use, %d pages, len %d", p.InUse(), len(s.Pages()), s.Len())
	}
}
