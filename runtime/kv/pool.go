// Package kv is the host side of the paged KV cache: a pool of fixed-size pages with a free
// list and reference counts, and sequences, each a page table and a length. The device holds
// the pages themselves (runtime/model); this package is pure Go, so the scheduler can plan
// pages without the device.
package kv

import (
	"errors"
	"fmt"
)

// ErrPoolExhausted is returned when the KV page pool has no free page left.
var ErrPoolExhausted = errors.New("KV cache page pool exhausted")

// ErrContextFull is returned when a sequence would outgrow the model's context.
var ErrContextFull = errors.New("sequence longer than the context")

// PagePool is the host-side bookkeeping of the paged KV cache: a fixed set of pages of
// PageSize token slots, a free list and a reference count per page, so sequences can share a
// prefix.
type PagePool struct {
	PageSize int
	refs     []int // [n_pages] reference count; 0 = free
	free     []int // free page ids, popped from the end
}

// NewPagePool makes a pool of n pages of pageSize slots.
func NewPagePool(n, pageSize int) *PagePool {
	p := &PagePool{PageSize: pageSize, refs: make([]int, n)}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	return p
}

// Pages is the pool's size; Free the pages on the free list; InUse the others.
func (p *PagePool) Pages() int { return len(p.refs) }
func (p *PagePool) Free() int  { return len(p.free) }
func (p *PagePool) InUse() int { return len(p.refs) - len(p.free) }

func (p *PagePool) alloc() (int, error) {
	if len(p.free) == 0 {
		return 0, fmt.Errorf("%w: all %d pages of %d slots in use", ErrPoolExhausted, len(p.refs), p.PageSize)
	}
	id := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.refs[id] = 1
	return id, nil
}

func (p *PagePool) release(id int) {
	if p.refs[id] <= 0 {
		panic(fmt.Sprintf("kv: page %d released with refcount %d", id, p.refs[id]))
	}
	p.refs[id]--
	if p.refs[id] == 0 {
		p.free = append(p.free, id)
	}
}

// PageCopy asks the device to copy page From to page To (copy-on-write of a shared page).
type PageCopy struct{ From, To int }

// Sequence is one sequence's view of the cache: its page table and its length in tokens.
type Sequence struct {
	pool  *PagePool
	pages []int // logical page -> physical page
	n     int   // tokens in the cache
}

// NewSequence starts an empty sequence on pool p.
func (p *PagePool) NewSequence() *Sequence { return &Sequence{pool: p} }

// Len is the number of tokens whose K/V are in the cache.
func (s *Sequence) Len() int { return s.n }

// Pages is the page table (logical to physical).
func (s *Sequence) Pages() []int { return s.pages }

// PagesNeeded is the number of free pages Reserve(newLen) would take: new pages, and private
// copies of the shared pages the new tokens write into.
func (s *Sequence) PagesNeeded(newLen int) int {
	ps := s.pool.PageSize
	need := (newLen + ps - 1) / ps
	n := max(0, need-len(s.pages))
	for lp := s.n / ps; lp < len(s.pages) && lp < need; lp++ {
		if s.pool.refs[s.pages[lp]] > 1 {
			n++
		}
	}
	return n
}

// Reserve makes room for tokens up to newLen: it allocates pages, and replaces shared pages
// that the new tokens will write into by private copies (returned for the device to copy).
// On error nothing has changed.
func (s *Sequence) Reserve(newLen int) ([]PageCopy, error) {
	ps := s.pool.PageSize
	need := (newLen + ps - 1) / ps
	var allocated []int
	undo := func() {
		for _, id := range allocated {
			s.pool.release(id)
		}
	}
	var copies []PageCopy
	// Pages holding slots [n, newLen) that are shared must be copied before they are written.
	for lp := s.n / ps; lp < len(s.pages) && lp < need; lp++ {
		if s.pool.refs[s.pages[lp]] > 1 {
			id, err := s.pool.alloc()
			if err != nil {
				undo()
				return nil, err
			}
			allocated = append(allocated, id)
			copies = append(copies, PageCopy{From: s.pages[lp], To: id})
		}
	}
	var fresh []int
	for len(s.pages)+len(fresh) < need {
		id, err := s.pool.alloc()
		if err != nil {
			undo()
			return nil, err
		}
		allocated = append(allocated, id)
		fresh = append(fresh, id)
	}
	for _, c := range copies {
		for lp, id := range s.pages {
			if id == c.From {
				s.pool.release(id)
				s.pages[lp] = c.To
				break
			}
		}
	}
	s.pages = append(s.pages, fresh...)
	return copies, nil
}

// Commit records that the cache now holds n tokens (after a step wrote them).
func (s *Sequence) Commit(n int) {
	if n > len(s.pages)*s.pool.PageSize {
		panic(fmt.Sprintf("kv: commit of %d tokens with %d pages", n, len(s.pages)))
	}
	s.n = n
}

// Truncate shortens the sequence to n tokens (n <= Len) and frees the pages past them.
func (s *Sequence) Truncate(n int) {
	if n > s.n {
		return
	}
	s.n = n
	keep := (n + s.pool.PageSize - 1) / s.pool.PageSize
	for _, id := range s.pages[keep:] {
		s.pool.release(id)
	}
	s.pages = s.pages[:keep]
}

// Fork returns a new sequence sharing this one's pages (reference counted).
func (s *Sequence) Fork() *Sequence {
	f := &Sequence{pool: s.pool, pages: append([]int(nil), s.pages...), n: s.n}
	for _, id := range f.pages {
		s.pool.refs[id]++
	}
	return f
}

// Release returns all the sequence's pages to the pool.
func (s *Sequence) Release() {
	for _, id := range s.pages {
		s.pool.release(id)
	}
	s.pages, s.n = nil, 0
}
