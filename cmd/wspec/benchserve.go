package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/sched"
	"github.com/wspec/wspec/spec/serve"
)

// serveBench are `wspec bench --serve`'s flags: it measures the OpenAI server on loopback.
type serveBench struct {
	on       *bool
	conc     *[]int
	requests *int
	json     *string
	workload *string
	caching  *string
	replicas *int
}

func addServeBenchFlags(fs *pflag.FlagSet) *serveBench {
	return &serveBench{
		on:       fs.Bool("serve", false, "benchmark wspec serve on loopback: throughput and latency at each --concurrency, speculation on and off"),
		conc:     fs.IntSlice("concurrency", []int{1, 4, 16}, "with --serve: concurrent clients, one run each"),
		requests: fs.Int("requests", 8, "with --serve: sessions per run (at least the concurrency; a chat session is several requests)"),
		json:     fs.String("json", "", "with --serve or --prompts: also write the results to this JSON file"),
		workload: fs.String("workload", "stories", "with --serve: "+workloadNames()),
		caching:  fs.String("prefix-caching", "on", "with --serve: on, off, or both (each run twice, on an engine with and one without)"),
		replicas: fs.Int("replicas", 1, "with --serve: above 1, start that many replicas and compare routing them round-robin and by prefix affinity and queue length (benchroute.go)"),
	}
}

// serveBenchRow is one run: a workload at a concurrency, speculation on or off, prefix
// caching on or off.
type serveBenchRow struct {
	Workload         string  `json:"workload"`
	PrefixCaching    bool    `json:"prefix_caching"`
	Speculation      string  `json:"speculation"`
	Concurrency      int     `json:"concurrency"`
	Sessions         int     `json:"sessions"`
	Requests         int     `json:"requests"`
	GeneratedTokens  int     `json:"generated_tokens"`
	Seconds          float64 `json:"seconds"`
	TokensPerSecond  float64 `json:"tokens_per_second"`
	TTFTMedianMs     float64 `json:"ttft_median_ms"`
	TTFTP90Ms        float64 `json:"ttft_p90_ms"`
	TTFTLaterMs      float64 `json:"ttft_later_turns_median_ms"` // turns after a session's first (chat)
	ITLMedianMs      float64 `json:"itl_median_ms"`
	ITLP90Ms         float64 `json:"itl_p90_ms"`
	DraftTokens      int64   `json:"draft_tokens"`
	AcceptedTokens   int64   `json:"accepted_tokens"`
	CacheHitRate     float64 `json:"prefix_cache_hit_rate"` // prompt tokens found in the cache / looked up
	MaxTokensRequest int     `json:"max_tokens"`
}

// benchPrompts are the requests' prompts, of mixed lengths.
var benchPrompts = []string{
	"Once upon a time",
	"Tom and Lily went to the park. They",
	"One day, a big bear found a shiny red ball in the forest. He",
	"There was a girl named Sue who loved to paint. Every morning she took her brushes to the garden. One day",
}

// start checks the flags and runs the benchmark; --tokens is the workload's (64, a chat 32)
// unless given.
func (b *serveBench) start(fs *pflag.FlagSet, modelDir, adapter, dtype string, tokens int, sf *specFlags) error {
	sc, err := sf.config()
	if err != nil {
		return err
	}
	if wl, ok := workloads[*b.workload]; ok && !fs.Changed("tokens") {
		tokens = wl.tokens
	}
	return b.run(modelDir, adapter, dtype, tokens, sc)
}

// run measures the workload at each concurrency, with the engine's speculation and without
// it (the request's "speculative" field set to 0), on an engine with prefix caching, one
// without, or both.
func (b *serveBench) run(modelDir, adapter, dtype string, tokens int, sc *spec.Config) error {
	for _, c := range *b.conc {
		if c < 1 {
			return fmt.Errorf("--concurrency %d: want at least 1", c)
		}
	}
	wl, ok := workloads[*b.workload]
	if !ok {
		return fmt.Errorf("--workload %q: want one of %s", *b.workload, workloadNames())
	}
	switch r := *b.replicas; {
	case r < 1 || r > 8:
		return fmt.Errorf("--replicas %d: want 1..8", r)
	case r > 1:
		return b.runRoutes(modelDir, adapter, dtype, tokens, wl)
	}
	var cachings []bool
	switch *b.caching {
	case "on":
		cachings = []bool{true}
	case "off":
		cachings = []bool{false}
	case "both":
		cachings = []bool{true, false}
	default:
		return fmt.Errorf("--prefix-caching %q: want on, off or both", *b.caching)
	}
	if sc == nil {
		sc = &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4}
	}
	var rows []serveBenchRow
	for _, caching := range cachings {
		r, err := b.runEngine(modelDir, adapter, dtype, tokens, sc, wl, caching)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	if *b.json != "" {
		out, _ := json.MarshalIndent(rows, "", "  ")
		return os.WriteFile(*b.json, append(out, '\n'), 0o644)
	}
	return nil
}

// stepCounts are the engine's step counters the rows read.
type stepCounts struct{ drafts, accepted, queries, hits atomic.Int64 }

// runEngine starts a server in-process on a free loopback port over an engine with prefix
// caching on or off, and runs the workload on it.
func (b *serveBench) runEngine(modelDir, adapter, dtype string, tokens int, sc *spec.Config, wl workload, caching bool) ([]serveBenchRow, error) {
	var n stepCounts
	e, err := engine.Load(modelDir, engine.Options{Adapter: adapter, DType: dtype, Progress: loadBar(), FirstRun: compileNotice(), Speculative: sc,
		NoPrefixCaching: !caching, OnStep: func(st sched.StepInfo) {
			n.drafts.Add(int64(st.Drafts))
			n.accepted.Add(int64(st.Accepted))
			n.queries.Add(int64(st.CacheQueries))
			n.hits.Add(int64(st.CachedTokens))
		}})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	url, stop, err := serveLoopback(e)
	if err != nil {
		return nil, err
	}
	defer stop()
	info := e.Info()
	fmt.Printf("wspec serve on %s (%s, %s weights), %s k=%d, prefix caching %v; workload %s (%s); %d tokens a request, greedy, streamed\n",
		info.Adapter, info.Dir, info.DType, info.Method, info.K, caching, wl.name, wl.about, tokens)
	if _, err := benchRequest(url, "Hello", 8, true); err != nil { // warm-up
		return nil, err
	}
	var rows []serveBenchRow
	runs := 0
	fmt.Printf("%-14s %5s %5s %7s %8s %9s %15s %10s %15s %13s %6s\n", "speculation", "conc", "reqs", "tokens", "seconds", "tok/s",
		"TTFT p50/p90 ms", "later ms", "ITL p50/p90 ms", "drafts (acc)", "cache")
	for _, c := range *b.conc {
		// An unrecorded run at this concurrency first (without speculation, so the suffix
		// method's global tree learns nothing from it): the first run at a new concurrency
		// touches KV pages and records steps no run has yet, which would cost whichever
		// measured run came first.
		runs++
		if _, err := benchRun(oneURL(url), wl, fmt.Sprintf("Day %d. ", runs), c, max(c, *b.requests), tokens, false); err != nil {
			return nil, err
		}
		for _, specOn := range []bool{true, false} {
			d0, a0, q0, h0 := n.drafts.Load(), n.accepted.Load(), n.queries.Load(), n.hits.Load()
			runs++
			row, err := benchRun(oneURL(url), wl, fmt.Sprintf("Day %d. ", runs), c, max(c, *b.requests), tokens, specOn)
			if err != nil {
				return nil, err
			}
			row.PrefixCaching = caching
			row.DraftTokens, row.AcceptedTokens = n.drafts.Load()-d0, n.accepted.Load()-a0
			if q := n.queries.Load() - q0; q > 0 {
				row.CacheHitRate = float64(n.hits.Load()-h0) / float64(q)
			}
			if specOn {
				row.Speculation = fmt.Sprintf("%s k=%d", info.Method, info.K)
			}
			rows = append(rows, row)
			acc := "-"
			if row.DraftTokens > 0 {
				acc = fmt.Sprintf("%d (%.0f%%)", row.DraftTokens, 100*float64(row.AcceptedTokens)/float64(row.DraftTokens))
			}
			fmt.Printf("%-14s %5d %5d %7d %8.2f %9.1f %15s %10.0f %15s %13s %5.0f%%\n", row.Speculation, c, row.Requests, row.GeneratedTokens, row.Seconds,
				row.TokensPerSecond, fmt.Sprintf("%.0f / %.0f", row.TTFTMedianMs, row.TTFTP90Ms), row.TTFTLaterMs,
				fmt.Sprintf("%.1f / %.1f", row.ITLMedianMs, row.ITLP90Ms), acc, 100*row.CacheHitRate)
		}
	}
	return rows, nil
}

// benchRun runs n sessions of wl from c concurrent clients, each session's turns in order,
// each request sent where rt picks.
// Every prompt starts with salt, which differs from run to run, so that no run finds an
// earlier run's prompts in the prefix cache.
func benchRun(rt router, wl workload, salt string, c, n, tokens int, specOn bool) (serveBenchRow, error) {
	row := serveBenchRow{Workload: wl.name, Speculation: "off", Concurrency: c, Sessions: n, MaxTokensRequest: tokens}
	var (
		mu               sync.Mutex
		ttft, later, itl []float64
		firstErr         error
		next             atomic.Int64
		wg               sync.WaitGroup
	)
	t0 := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				prompt := salt + wl.first(i)
				for turn := 0; turn < wl.turns; turn++ {
					if turn > 0 {
						prompt = wl.next(i, turn, prompt)
					}
					url, release := rt.pick(prompt)
					r, err := benchRequest(url, prompt, tokens, specOn)
					release()
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					row.Requests++
					row.GeneratedTokens += r.tokens
					if r.ttft > 0 { // some text came (not an end-of-sequence token at once)
						ttft = append(ttft, r.ttft.Seconds()*1000)
						if turn > 0 {
							later = append(later, r.ttft.Seconds()*1000)
						}
					}
					if r.tokens > 1 {
						itl = append(itl, (r.last-r.ttft).Seconds()*1000/float64(r.tokens-1))
					}
					mu.Unlock()
					if err != nil {
						return
					}
					prompt += r.text
				}
			}
		}()
	}
	wg.Wait()
	row.Seconds = time.Since(t0).Seconds()
	row.TokensPerSecond = float64(row.GeneratedTokens) / row.Seconds
	row.TTFTMedianMs, row.TTFTP90Ms = percentile(ttft, 50), percentile(ttft, 90)
	row.TTFTLaterMs = percentile(later, 50)
	row.ITLMedianMs, row.ITLP90Ms = percentile(itl, 50), percentile(itl, 90)
	return row, firstErr
}

// benchResult is one request's timing: first and last text after sending, its tokens and
// its text.
type benchResult struct {
	ttft, last time.Duration
	tokens     int
	text       string
}

// benchRequest sends one streamed greedy completion and times its events.
func benchRequest(url, prompt string, tokens int, specOn bool) (benchResult, error) {
	body := map[string]any{"prompt": prompt, "max_tokens": tokens, "temperature": 0, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
	if !specOn {
		body["speculative"] = map[string]any{"num_speculative_tokens": 0}
	}
	b, _ := json.Marshal(body)
	t0 := time.Now()
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		return benchResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return benchResult{}, fmt.Errorf("bench request: %s", resp.Status)
	}
	var r benchResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct{ Text string } `json:"choices"`
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error any `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Error != nil {
			return r, fmt.Errorf("bench request: event %s", data)
		}
		if len(ev.Choices) > 0 && ev.Choices[0].Text != "" {
			r.text += ev.Choices[0].Text
			now := time.Since(t0)
			if r.ttft == 0 {
				r.ttft = now
			}
			r.last = now
		}
		if ev.Usage != nil {
			r.tokens = ev.Usage.CompletionTokens
		}
	}
	return r, sc.Err()
}

// percentile is the nearest-rank p-th percentile of xs (0 for none).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// serveLoopback serves e on a free loopback port; it returns the completions URL, and stop,
// which ends the server.
func serveLoopback(e *engine.Engine) (url string, stop func(), err error) {
	s, err := serve.New(e, serve.Config{})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String() + "/v1/completions", func() { cancel(); <-served }, nil
}
