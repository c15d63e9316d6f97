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
}

func addServeBenchFlags(fs *pflag.FlagSet) *serveBench {
	return &serveBench{
		on:       fs.Bool("serve", false, "benchmark wspec serve on loopback: throughput and latency at each --concurrency, speculation on and off"),
		conc:     fs.IntSlice("concurrency", []int{1, 4, 16}, "with --serve: concurrent clients, one run each"),
		requests: fs.Int("requests", 8, "with --serve: streamed requests per run (at least the concurrency)"),
		json:     fs.String("json", "", "with --serve or --prompts: also write the results to this JSON file"),
	}
}

// serveBenchRow is one run: a concurrency, speculation on or off.
type serveBenchRow struct {
	Speculation      string  `json:"speculation"`
	Concurrency      int     `json:"concurrency"`
	Requests         int     `json:"requests"`
	GeneratedTokens  int     `json:"generated_tokens"`
	Seconds          float64 `json:"seconds"`
	TokensPerSecond  float64 `json:"tokens_per_second"`
	TTFTMedianMs     float64 `json:"ttft_median_ms"`
	TTFTP90Ms        float64 `json:"ttft_p90_ms"`
	ITLMedianMs      float64 `json:"itl_median_ms"`
	ITLP90Ms         float64 `json:"itl_p90_ms"`
	DraftTokens      int64   `json:"draft_tokens"`
	AcceptedTokens   int64   `json:"accepted_tokens"`
	MaxTokensRequest int     `json:"max_tokens"`
}

// benchPrompts are the requests' prompts, of mixed lengths.
var benchPrompts = []string{
	"Once upon a time",
	"Tom and Lily went to the park. They",
	"One day, a big bear found a shiny red ball in the forest. He",
	"There was a girl named Sue who loved to paint. Every morning she took her brushes to the garden. One day",
}

// start checks the flags and runs the benchmark; --tokens is 64 unless given.
func (b *serveBench) start(fs *pflag.FlagSet, modelDir, adapter, dtype string, tokens int, sf *specFlags) error {
	sc, err := sf.config()
	if err != nil {
		return err
	}
	if !fs.Changed("tokens") {
		tokens = 64
	}
	return b.run(modelDir, adapter, dtype, tokens, sc)
}

// run starts a server in-process on a free loopback port and measures each concurrency with
// the engine's speculation and without it (the request's "speculative" field set to 0).
func (b *serveBench) run(modelDir, adapter, dtype string, tokens int, sc *spec.Config) error {
	for _, c := range *b.conc {
		if c < 1 {
			return fmt.Errorf("--concurrency %d: want at least 1", c)
		}
	}
	if sc == nil {
		sc = &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4}
	}
	var drafts, accepted atomic.Int64
	e, err := engine.Load(modelDir, engine.Options{Adapter: adapter, DType: dtype, Progress: loadBar(), FirstRun: compileNotice(), Speculative: sc,
		OnStep: func(st sched.StepInfo) { drafts.Add(int64(st.Drafts)); accepted.Add(int64(st.Accepted)) }})
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := serve.New(e, serve.Config{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	defer func() { stop(); <-served }()
	url := "http://" + ln.Addr().String() + "/v1/completions"
	info := e.Info()
	fmt.Printf("wspec serve on %s (%s, %s weights), %s k=%d; %d tokens a request, greedy, streamed\n",
		info.Adapter, info.Dir, info.DType, info.Method, info.K, tokens)
	if _, err := benchRequest(url, benchPrompts[0], 8, true); err != nil { // warm-up
		return err
	}
	var rows []serveBenchRow
	fmt.Printf("%-12s %5s %5s %7s %8s %9s %15s %15s %13s\n", "speculation", "conc", "reqs", "tokens", "seconds", "tok/s", "TTFT p50/p90 ms", "ITL p50/p90 ms", "drafts (acc)")
	for _, specOn := range []bool{true, false} {
		for _, c := range *b.conc {
			d0, a0 := drafts.Load(), accepted.Load()
			row, err := benchRun(url, c, max(c, *b.requests), tokens, specOn)
			if err != nil {
				return err
			}
			row.DraftTokens, row.AcceptedTokens = drafts.Load()-d0, accepted.Load()-a0
			if specOn {
				row.Speculation = fmt.Sprintf("%s k=%d", info.Method, info.K)
			}
			rows = append(rows, row)
			acc := "-"
			if row.DraftTokens > 0 {
				acc = fmt.Sprintf("%d (%.0f%%)", row.DraftTokens, 100*float64(row.AcceptedTokens)/float64(row.DraftTokens))
			}
			fmt.Printf("%-12s %5d %5d %7d %8.2f %9.1f %15s %15s %13s\n", row.Speculation, c, row.Requests, row.GeneratedTokens, row.Seconds,
				row.TokensPerSecond, fmt.Sprintf("%.0f / %.0f", row.TTFTMedianMs, row.TTFTP90Ms), fmt.Sprintf("%.1f / %.1f", row.ITLMedianMs, row.ITLP90Ms), acc)
		}
	}
	if *b.json != "" {
		out, _ := json.MarshalIndent(rows, "", "  ")
		return os.WriteFile(*b.json, append(out, '\n'), 0o644)
	}
	return nil
}

// benchRun sends n streamed requests from c concurrent clients.
func benchRun(url string, c, n, tokens int, specOn bool) (serveBenchRow, error) {
	row := serveBenchRow{Speculation: "off", Concurrency: c, Requests: n, MaxTokensRequest: tokens}
	var (
		mu        sync.Mutex
		ttft, itl []float64
		firstErr  error
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	t0 := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				r, err := benchRequest(url, benchPrompts[i%len(benchPrompts)], tokens, specOn)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				row.GeneratedTokens += r.tokens
				ttft = append(ttft, r.ttft.Seconds()*1000)
				if r.tokens > 1 {
					itl = append(itl, (r.last-r.ttft).Seconds()*1000/float64(r.tokens-1))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	row.Seconds = time.Since(t0).Seconds()
	row.TokensPerSecond = float64(row.GeneratedTokens) / row.Seconds
	row.TTFTMedianMs, row.TTFTP90Ms = percentile(ttft, 50), percentile(ttft, 90)
	row.ITLMedianMs, row.ITLP90Ms = percentile(itl, 50), percentile(itl, 90)
	return row, firstErr
}

// benchResult is one request's timing: first and last text after sending, and its tokens.
type benchResult struct {
	ttft, last time.Duration
	tokens     int
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
