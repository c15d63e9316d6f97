// Package kv is the host side of the paged KV cache: a pool of fixed-size pages with
// reference counts, sequences (each a page table and a length), and the prefix cache, which
// keeps the full pages of finished prompts and outputs so that a later sequence starting with
// the same tokens shares them instead of computing them again. The device holds the pages
// themselves (runtime/model); this package is pure Go, so the scheduler plans pages without
// the device.
package kv

import (
	"errors"
	"fmt"
)

// ErrPoolExhausted is returned when the KV page pool has no free page left.
var ErrPoolExhausted = errors.New("KV cache page pool exhausted")

// ErrContextFull is returned when a sequence would outgrow the model's context.
var ErrContextFull = errors.New("sequence longer than the context")

// PagePool is a fixed set of pages of PageSize token slots. A page is free, in use by one
// or more sequences (its reference count), or cached: unused but holding the KV of a full
// page of tokens the prefix cache can hand out again (then evicted least recently used
// first when a page is needed).
type PagePool struct {
	PageSize int
	refs     []int // [n_pages] reference count
	free     []int // free page ids, popped from the end
	prefix   *prefixCache
}

// NewPagePool makes a pool of n pages of pageSize slots, without a prefix cache.
func NewPagePool(n, pageSize int) *PagePool {
	p := &PagePool{PageSize: pageSize, refs: make([]int, n)}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	return p
}

// Pages is the pool's size; Free the pages a sequence can take (free or cached); InUse the
// others.
func (p *PagePool) Pages() int { return len(p.refs) }
func (p *PagePool) Free() int  { return len(p.free) + p.prefix.evictable() }
func (p *PagePool) InUse() int { return len(p.refs) - p.Free() }

func (p *PagePool) alloc() (int, error) {
	if len(p.free) == 0 {
		if id, ok := p.prefix.evict(); ok {
			p.refs[id] = 1
			return id, nil
		}
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
	if p.refs[id] == 0 && !p.prefix.keep(id) {
		p.free = append(p.free, id)
	}
}

// Sequence is one sequence's view of the cache: its page table and its length in tokens.
type Sequence struct {
	pool  *PagePool
	pages []int    // logical page -> physical page
	n     int      // tokens in the cache
	keys  []uint64 // the prefix keys of its first full pages (prefix caching)
}

// NewSequence starts an empty sequence on pool p.
func (p *PagePool) NewSequence() *Sequence { return &Sequence{pool: p} }

// Len is the number of tokens whose K/V are in the cache.
func (s *Sequence) Len() int { return s.n }

// Pages is the page table (logical to physical).
func (s *Sequence) Pages() []int { return s.pages }

// PagesNeeded is the number of free pages Reserve(newLen) would take.
func (s *Sequence) PagesNeeded(newLen int) int {
	ps := s.pool.PageSize
	return max(0, (newLen+ps-1)/ps-len(s.pages))
}

// Reserve makes room for tokens up to newLen by allocating pages. On error nothing has
// changed. The pages the new tokens write into are the sequence's own: a page shared with
// another sequence is a full page of the prefix cache, which no sequence writes again.
func (s *Sequence) Reserve(newLen int) error {
	ps := s.pool.PageSize
	need := (newLen + ps - 1) / ps
	if lp := s.n / ps; lp < len(s.pages) && lp < need && s.pool.refs[s.pages[lp]] > 1 {
		panic(fmt.Sprintf("kv: a write into page %d, shared by %d sequences", s.pages[lp], s.pool.refs[s.pages[lp]]))
	}
	var fresh []int
	for len(s.pages)+len(fresh) < need {
		id, err := s.pool.alloc()
		if err != nil {
			for _, f := range fresh {
				s.pool.release(f)
			}
			return err
		}
		fresh = append(fresh, id)
	}
	s.pages = append(s.pages, fresh...)
	return nil
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
	s.keys = s.keys[:min(len(s.keys), n/s.pool.PageSize)]
}

// Release returns all the sequence's pages to the pool (cached ones stay cached).
func (s *Sequence) Release() {
	for _, id := range s.pages {
		s.pool.release(id)
	}
	s.pages, s.n, s.keys = nil, 0, nil
}
