package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/sched"
)

// A router picks the server a request goes to; release is called when its reply has ended.
type router interface {
	pick(prompt string) (url string, release func())
}

// oneURL sends every request to one server.
type oneURL string

func (u oneURL) pick(string) (string, func()) { return string(u), func() {} }

// roundRobin sends each request to the next replica in turn.
type roundRobin struct {
	urls []string
	n    atomic.Int64
}

func (r *roundRobin) pick(string) (string, func()) {
	return r.urls[int(r.n.Add(1)-1)%len(r.urls)], func() {}
}

// routeBlock is the prefix index's block: prompts are hashed in blocks of this many bytes,
// each block's hash chained to the one before, as the inference gateway's prefix-cache
// scorer hashes them.
const routeBlock = 64

// affinity scores replicas as the Gateway API Inference Extension's endpoint picker does with
// its default scorers: a prefix-cache scorer (the share of the prompt's leading blocks the
// replica was last sent, from an index of the blocks the router routed there) and a queue
// scorer (1 - the replica's requests in flight / the most any has), weighted 3 and 2, the
// highest total winning (ties: fewer in flight, then the lower index). The endpoint picker
// reads a replica's queue from its vllm:num_requests_waiting; the router's own count of
// requests in flight is the same quantity without the scrape's delay.
type affinity struct {
	urls     []string
	mu       sync.Mutex
	inflight []int
	blocks   []map[uint64]bool // per replica: the block hashes routed there
}

func newAffinity(urls []string) *affinity {
	a := &affinity{urls: urls, inflight: make([]int, len(urls)), blocks: make([]map[uint64]bool, len(urls))}
	for i := range a.blocks {
		a.blocks[i] = map[uint64]bool{}
	}
	return a
}

// prefixHashes are the chained hashes of the prompt's whole blocks.
func prefixHashes(prompt string) []uint64 {
	var out []uint64
	var prev uint64
	for i := 0; i+routeBlock <= len(prompt); i += routeBlock {
		h := fnv.New64a()
		var b [8]byte
		for j := range b {
			b[j] = byte(prev >> (8 * j))
		}
		h.Write(b[:])
		h.Write([]byte(prompt[i : i+routeBlock]))
		prev = h.Sum64()
		out = append(out, prev)
	}
	return out
}

func (a *affinity) pick(prompt string) (string, func()) {
	hs := prefixHashes(prompt)
	a.mu.Lock()
	defer a.mu.Unlock()
	most := 1
	for _, n := range a.inflight {
		most = max(most, n)
	}
	best, bestScore := 0, -1.0
	for r := range a.urls {
		matched := 0
		for _, h := range hs {
			if !a.blocks[r][h] {
				break
			}
			matched++
		}
		prefix := 0.0
		if len(hs) > 0 {
			prefix = float64(matched) / float64(len(hs))
		}
		score := 3*prefix + 2*(1-float64(a.inflight[r])/float64(most))
		if score > bestScore || score == bestScore && a.inflight[r] < a.inflight[best] {
			best, bestScore = r, score
		}
	}
	for _, h := range hs {
		a.blocks[best][h] = true
	}
	a.inflight[best]++
	return a.urls[best], func() {
		a.mu.Lock()
		a.inflight[best]--
		a.mu.Unlock()
	}
}

// routeBenchRow is one policy's run over the replicas.
type routeBenchRow struct {
	Policy   string `json:"policy"`
	Replicas int    `json:"replicas"`
	serveBenchRow
}

// runRoutes starts replicas servers in-process on loopback, each over its own engine (prefix
// caching on, no speculation), and runs the workload through each policy at each
// concurrency: round-robin, then prefix affinity with queue length. Each run's prompts start
// with a salt of its own, so no run finds another's prompts in a cache.
func (b *serveBench) runRoutes(modelDir, adapter, dtype string, tokens int, wl workload) error {
	n := *b.replicas
	var counts []*stepCounts
	var urls []string
	for i := range n {
		c := &stepCounts{}
		e, err := engine.Load(modelDir, engine.Options{Adapter: adapter, DType: dtype, Progress: loadBar(), FirstRun: compileNotice(),
			OnStep: func(st sched.StepInfo) {
				c.queries.Add(int64(st.CacheQueries))
				c.hits.Add(int64(st.CachedTokens))
			}})
		if err != nil {
			return err
		}
		defer e.Close()
		url, stop, err := serveLoopback(e)
		if err != nil {
			return err
		}
		defer stop()
		urls = append(urls, url)
		counts = append(counts, c)
		if _, err := benchRequest(urls[i], "Hello", 8, false); err != nil { // warm-up
			return err
		}
	}
	fmt.Printf("%d wspec serve replicas on loopback (%s), prefix caching on, no speculation; workload %s (%s); %d tokens a request, greedy, streamed\n",
		n, modelDir, wl.name, wl.about, tokens)
	fmt.Printf("%-12s %5s %5s %9s %15s %14s %6s\n", "policy", "conc", "reqs", "tok/s", "TTFT p50/p90 ms", "later turns ms", "cache")
	var rows []routeBenchRow
	runs := 0
	for _, c := range *b.conc {
		runs++ // an unrecorded run at this concurrency first, as --serve does
		if _, err := benchRun(&roundRobin{urls: urls}, wl, fmt.Sprintf("Day %d. ", runs), c, max(c, *b.requests), tokens, false); err != nil {
			return err
		}
		for _, policy := range []string{"round-robin", "affinity"} {
			var rt router = &roundRobin{urls: urls}
			if policy == "affinity" {
				rt = newAffinity(urls)
			}
			var q0, h0 int64
			for _, c := range counts {
				q0, h0 = q0+c.queries.Load(), h0+c.hits.Load()
			}
			runs++
			row, err := benchRun(rt, wl, fmt.Sprintf("Day %d. ", runs), c, max(c, *b.requests), tokens, false)
			if err != nil {
				return err
			}
			var q, h int64
			for _, c := range counts {
				q, h = q+c.queries.Load(), h+c.hits.Load()
			}
			if q > q0 {
				row.CacheHitRate = float64(h-h0) / float64(q-q0)
			}
			row.PrefixCaching = true
			rows = append(rows, routeBenchRow{Policy: policy, Replicas: n, serveBenchRow: row})
			fmt.Printf("%-12s %5d %5d %9.1f %15s %14.0f %5.0f%%\n", policy, c, row.Requests, row.TokensPerSecond,
				fmt.Sprintf("%.0f / %.0f", row.TTFTMedianMs, row.TTFTP90Ms), row.TTFTLaterMs, 100*row.CacheHitRate)
		}
	}
	if *b.json != "" {
		out, _ := json.MarshalIndent(rows, "", "  ")
		return os.WriteFile(*b.json, append(out, '\n'), 0o644)
	}
	return nil
}
