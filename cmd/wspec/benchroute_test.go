package main

import (
	"strings"
	"testing"
)

// The affinity router sends a conversation's later turns where its earlier ones went, spreads
// new conversations over idle replicas, and lets a busy replica's queue outweigh a short
// prefix match; round-robin takes each replica in turn.
func TestRouters(t *testing.T) {
	urls := []string{"a", "b", "c"}
	a := newAffinity(urls)
	history := strings.Repeat("Once upon a time there was a dog. ", 8) // 4 blocks of 64 bytes and more
	first, release := a.pick(history)
	release()
	for turn := range 3 {
		history += " And then the dog ran home. "
		got, release := a.pick(history)
		release()
		if got != first {
			t.Fatalf("turn %d went to %s, the conversation's earlier turns to %s", turn+2, got, first)
		}
	}
	// Three new conversations at once (nothing released): one to each replica.
	seen := map[string]bool{}
	for i := range 3 {
		u, _ := a.pick(strings.Repeat(string(rune('p'+i)), 200))
		seen[u] = true
	}
	if len(seen) != 3 {
		t.Fatalf("three new conversations in flight went to %v", seen)
	}
	// A replica with five requests in flight loses a prompt that matches 1 of its 21 blocks.
	b := newAffinity(urls)
	shared := strings.Repeat("s", routeBlock)
	if u, _ := b.pick(shared); u != "a" {
		t.Fatalf("the first prompt went to %s", u)
	}
	b.inflight[0] = 5
	if got, _ := b.pick(shared + strings.Repeat("x", 20*routeBlock)); got == "a" {
		t.Errorf("a weak prefix match outweighed five requests in flight (%v)", b.inflight)
	}
	// With equal queues, the prefix decides.
	c := newAffinity(urls)
	_, r1 := c.pick("q" + strings.Repeat("w", routeBlock)) // to a
	_, r2 := c.pick("r" + strings.Repeat("w", routeBlock)) // to b: a is busy
	r1()
	r2()
	if got, _ := c.pick("r" + strings.Repeat("w", 2*routeBlock)); got != "b" {
		t.Errorf("a prompt extending b's went to %s", got)
	}
	rr := &roundRobin{urls: urls}
	var order []string
	for range 4 {
		u, _ := rr.pick("")
		order = append(order, u)
	}
	if strings.Join(order, "") != "abca" {
		t.Errorf("round-robin order %v", order)
	}
}
