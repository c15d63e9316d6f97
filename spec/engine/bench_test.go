package engine

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched"
)

// BenchmarkBatchedThroughput: c concurrent greedy generations of 64 tokens (c = 1, 2, 4, 8,
// 16), plain and with adaptive speculation (WSPEC_BENCH_MODE, default eagle3, up to k = 4):
// generated tokens per second over all requests, and the draft tokens the planner chose per
// running sequence and step, which shows where speculation switches off under load.
func BenchmarkBatchedThroughput(b *testing.B) {
	mode := os.Getenv("WSPEC_BENCH_MODE")
	if mode == "" {
		mode = "eagle3"
	}
	var mu sync.Mutex
	var drafts, seqSteps, steps, rows int
	onStep := func(si sched.StepInfo) {
		mu.Lock()
		defer mu.Unlock()
		drafts += si.Drafts
		seqSteps += si.Running
		steps++
		rows += si.Rows
	}
	e, err := Load(storiesDir, Options{Device: testDevice(b), Speculative: &spec.Config{Mode: mode, NumSpeculativeTokens: 4}, OnStep: onStep})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	prompts := []string{"Once upon a time", "Lily and Ben went to the park", "The little dog was sad because",
		"One day, a big red ball", "Tom had a toy car that", "The sun was shining and"}
	for _, c := range []int{1, 2, 4, 8, 16} {
		for _, plain := range []bool{true, false} {
			name := fmt.Sprintf("c=%d/%s", c, map[bool]string{true: "plain", false: mode + "-adaptive"}[plain])
			b.Run(name, func(b *testing.B) {
				var tokens int
				var el time.Duration
				mu.Lock()
				drafts, seqSteps, steps, rows = 0, 0, 0, 0
				mu.Unlock()
				for range b.N {
					var wg sync.WaitGroup
					var tmu sync.Mutex
					t0 := time.Now()
					for i := range c {
						wg.Add(1)
						go func() {
							defer wg.Done()
							res, err := e.Generate(context.Background(), prompts[i%len(prompts)], GenerateOptions{MaxTokens: 64, NoSpeculation: plain})
							if err != nil {
								b.Error(err)
								return
							}
							tmu.Lock()
							tokens += len(res.Tokens)
							tmu.Unlock()
						}()
					}
					wg.Wait()
					el += time.Since(t0)
				}
				b.ReportMetric(float64(tokens)/el.Seconds(), "tok/s")
				mu.Lock()
				if seqSteps > 0 {
					b.ReportMetric(float64(drafts)/float64(seqSteps), "drafts/seq/step")
					b.ReportMetric(float64(rows)/float64(steps), "rows/step")
				}
				mu.Unlock()
			})
		}
	}
}
