package kv

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
)

// The prefix cache (vLLM v1's automatic prefix caching): a full page's KV depends on its
// tokens and on every token before it, so a page is named by a key chained over the pages of
// its prefix, key(i) = hash(key(i-1), tokens of page i). A sequence registers its full pages
// once their KV is final (Register); a new sequence takes the longest run of registered pages
// its tokens start with (MatchPrefix), sharing them (reference counts) instead of computing
// them. Pages nobody uses stay cached, and are evicted least recently used first when a page
// is needed. Each entry keeps its page's tokens and its parent's key, checked on every match,
// so a hash collision can cost a hit, never a wrong page.

// prefixCache is a pool's registered pages. Its methods are safe on a nil cache (a pool
// without prefix caching), where they do nothing.
type prefixCache struct {
	seed    maphash.Seed
	byKey   map[uint64]int  // key -> page
	entry   map[int]*cached // page -> its entry
	lru     []int           // cached pages with no user, least recently used first, from lruHead
	lruHead int             // lru[:lruHead] is evicted
	lruAt   map[int]int     // page -> its index in lru (a page taken off leaves -1 behind)
	lruLive int

	// Queries and Hits count the tokens looked up and the tokens found (in whole pages).
	Queries, Hits int64
}

type cached struct {
	key, parent uint64
	tokens      []int
}

// EnablePrefixCaching turns the prefix cache on (pages registered and matched from now on).
func (p *PagePool) EnablePrefixCaching() {
	if p.prefix == nil {
		p.prefix = &prefixCache{seed: maphash.MakeSeed(), byKey: map[uint64]int{}, entry: map[int]*cached{}, lruAt: map[int]int{}}
	}
}

// PrefixCaching reports whether the pool caches prefixes.
func (p *PagePool) PrefixCaching() bool { return p.prefix != nil }

// PrefixStats are the tokens looked up in the prefix cache and the tokens found there.
func (p *PagePool) PrefixStats() (queries, hits int64) {
	if p.prefix == nil {
		return 0, 0
	}
	return p.prefix.Queries, p.prefix.Hits
}

// Key is the prefix key of the page holding tokens after the pages of key parent (0: the
// first page). Keys from one pool compare; they mean nothing to another.
func (p *PagePool) Key(parent uint64, tokens []int) uint64 {
	if p.prefix == nil {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(p.prefix.seed)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], parent)
	h.Write(b[:])
	for _, t := range tokens {
		binary.LittleEndian.PutUint64(b[:], uint64(t))
		h.Write(b[:])
	}
	return h.Sum64()
}

// Keys are the prefix keys of the full pages of tokens, in order.
func (p *PagePool) Keys(tokens []int) []uint64 {
	if p.prefix == nil {
		return nil
	}
	ps := p.PageSize
	keys := make([]uint64, 0, len(tokens)/ps)
	parent := uint64(0)
	for i := 0; (i+1)*ps <= len(tokens); i++ {
		parent = p.Key(parent, tokens[i*ps:(i+1)*ps])
		keys = append(keys, parent)
	}
	return keys
}

// Cached reports whether a page of key is registered.
func (p *PagePool) Cached(key uint64) bool {
	if p.prefix == nil {
		return false
	}
	_, ok := p.prefix.byKey[key]
	return ok
}

// CachedPrefix counts the tokens, in whole pages of at most limit tokens, that tokens start
// with and the prefix cache holds (what MatchPrefix would take), and how many of those pages
// no sequence uses (they count as free until taken). It changes nothing.
func (p *PagePool) CachedPrefix(tokens []int, limit int) (n, idle int) {
	m := p.match(tokens, limit)
	for _, c := range m {
		if p.refs[c.id] == 0 {
			idle++
		}
	}
	return len(m) * p.PageSize, idle
}

// match is the run of registered pages tokens start with (whole pages, at most limit
// tokens), each checked against its entry, and their keys.
func (p *PagePool) match(tokens []int, limit int) []cachedPage {
	c := p.prefix
	if c == nil {
		return nil
	}
	ps := p.PageSize
	var out []cachedPage
	parent := uint64(0)
	for i := 0; (i+1)*ps <= min(limit, len(tokens)); i++ {
		page := tokens[i*ps : (i+1)*ps]
		key := p.Key(parent, page)
		id, ok := c.byKey[key]
		if !ok || c.entry[id].parent != parent || !slices.Equal(c.entry[id].tokens, page) {
			break
		}
		out = append(out, cachedPage{id, key})
		parent = key
	}
	return out
}

type cachedPage struct {
	id  int
	key uint64
}

// MatchPrefix gives the empty sequence s the longest run of registered pages that tokens
// start with, whole pages of at most limit tokens, and returns the tokens they hold (its
// length now). The pool's stats count limit tokens looked up and those found. Without prefix
// caching it returns 0.
func (s *Sequence) MatchPrefix(tokens []int, limit int) int {
	c := s.pool.prefix
	if c == nil || s.n != 0 || len(s.pages) != 0 {
		return 0
	}
	for _, m := range s.pool.match(tokens, limit) {
		if s.pool.refs[m.id] == 0 {
			c.unlist(m.id)
		}
		s.pool.refs[m.id]++
		s.pages = append(s.pages, m.id)
		s.keys = append(s.keys, m.key)
	}
	s.n = len(s.pages) * s.pool.PageSize
	c.Queries += int64(limit)
	c.Hits += int64(s.n)
	return s.n
}

// Register records that the first len(tokens) tokens of s are tokens and their KV is final
// (the sequence will not write them again): its full pages among them join the prefix cache.
// A page whose key another page holds already stays the sequence's own.
func (s *Sequence) Register(tokens []int) {
	c := s.pool.prefix
	if c == nil {
		return
	}
	ps := s.pool.PageSize
	n := min(len(tokens), s.n) / ps
	for i := len(s.keys); i < n; i++ {
		parent := uint64(0)
		if i > 0 {
			parent = s.keys[i-1]
		}
		page := tokens[i*ps : (i+1)*ps]
		key := s.pool.Key(parent, page)
		s.keys = append(s.keys, key)
		id := s.pages[i]
		if _, taken := c.byKey[key]; taken || c.entry[id] != nil {
			continue
		}
		c.byKey[key] = id
		c.entry[id] = &cached{key: key, parent: parent, tokens: slices.Clone(page)}
	}
}

// keep lists a page that lost its last user when it is cached (and reports whether it did).
func (c *prefixCache) keep(id int) bool {
	if c == nil || c.entry[id] == nil {
		return false
	}
	if len(c.lru)-c.lruHead > 2*c.lruLive+64 { // mostly holes: compact
		live := make([]int, 0, c.lruLive)
		for _, p := range c.lru[c.lruHead:] {
			if p >= 0 {
				c.lruAt[p] = len(live)
				live = append(live, p)
			}
		}
		c.lru, c.lruHead = live, 0
	}
	c.lruAt[id] = len(c.lru)
	c.lru = append(c.lru, id)
	c.lruLive++
	return true
}

// unlist takes a cached page off the eviction list (a sequence uses it again).
func (c *prefixCache) unlist(id int) {
	if i, ok := c.lruAt[id]; ok {
		c.lru[i] = -1
		delete(c.lruAt, id)
		c.lruLive--
	}
}

// evictable is the number of cached pages nobody uses.
func (c *prefixCache) evictable() int {
	if c == nil {
		return 0
	}
	return c.lruLive
}

// evict takes the least recently used cached page out of the cache, for reuse.
func (c *prefixCache) evict() (int, bool) {
	if c == nil {
		return 0, false
	}
	for c.lruHead < len(c.lru) {
		id := c.lru[c.lruHead]
		c.lruHead++
		if id < 0 {
			continue
		}
		delete(c.lruAt, id)
		c.lruLive--
		delete(c.byKey, c.entry[id].key)
		delete(c.entry, id)
		return id, true
	}
	return 0, false
}
