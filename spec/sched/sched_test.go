package sched

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// cfg is a small Llama whose greedy text soon repeats itself (tied embeddings), so the ngram
// drafter's drafts often pass.
var cfg = weights.Config{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
	Vocab: 300, MaxSeq: 160, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true}

// refLimits are the reference model's step limits (the device model's defaults).
var refLimits = batch.Limits{MaxSeqs: 16, MaxLogitRows: 64, MaxDraft: 8, StepRows: 128}

// setup makes the reference model of cfg with a pool of pages (of 8 slots) and an ngram
// method, and a started scheduler on them.
func setup(t *testing.T, pages int, lim batch.Limits, o Options) (*ref.Model, *Scheduler) {
	t.Helper()
	m := ref.NewModel(ref.RandomLlama(cfg, 7), pages, 8, lim)
	s := New(m, &spec.Ngram{Min: 1, Max: 3}, o)
	go s.Run()
	t.Cleanup(s.Close)
	return m, s
}

// requests are prompts of mixed lengths with mixed settings: greedy and seeded sampling,
// speculation off, k 1..4, fixed or adaptive.
func requests(n int) []*Request {
	var out []*Request
	for i := 0; i < n; i++ {
		prompt := make([]int, 1+(i*7)%23)
		for j := range prompt {
			prompt[j] = 1 + (i*31+j*17)%(cfg.Vocab-1)
		}
		r := &Request{Ctx: context.Background(), Prompt: prompt, MaxNew: 20 + i%9, K: i % 5, FixedK: i%3 == 0, Stop: []int{0}}
		if i%4 == 3 {
			r.Sampling = batch.Sampling{Temperature: 0.9, TopP: 0.9, Seed: uint64(i)}
		}
		out = append(out, r)
	}
	return out
}

func wait(t *testing.T, c <-chan Result) Result {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(2 * time.Minute):
		t.Fatal("no result after 2 minutes")
	}
	return Result{}
}

// Requests run together give exactly the tokens each gets alone (greedy and seeded
// sampling, speculating or not), and the pages all come back.
func TestBatchedEqualsAlone(t *testing.T) {
	m, s := setup(t, 80, refLimits, Options{Cost: spec.NewCostModel(10*time.Millisecond, time.Millisecond)})
	reqs := requests(12)
	alone := make([][]int, len(reqs))
	for i, r := range reqs {
		res := wait(t, s.Submit(r))
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		alone[i] = res.Tokens
	}
	results := make([]chan Result, len(reqs))
	for i, r := range reqs {
		results[i] = make(chan Result, 1)
		go func() { results[i] <- wait(t, s.Submit(r)) }()
	}
	drafted := 0
	for i := range reqs {
		res := <-results[i]
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if !slices.Equal(res.Tokens, alone[i]) {
			t.Errorf("request %d (%+v): batched %v\nalone %v", i, *reqs[i], res.Tokens, alone[i])
		}
		drafted += res.Metrics.DraftTokens
	}
	if drafted == 0 {
		t.Error("no request drafted anything")
	}
	if err := s.Do(func() error {
		if n := m.Pool().InUse(); n != 0 {
			return fmt.Errorf("%d pages in use", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// With a page pool far smaller than the load, requests wait, some are preempted (their pages
// taken back and their tokens recomputed), and every one completes with the tokens it gets
// without preemption.
func TestPreemption(t *testing.T) {
	// 13 pages of 8 slots: room for about 3 of these sequences at once.
	m, s := setup(t, 13, refLimits, Options{})
	var reqs []*Request
	for i := 0; i < 8; i++ {
		reqs = append(reqs, &Request{Ctx: context.Background(), Prompt: []int{1 + i, 2 + i, 3, 4, 5}, MaxNew: 25, K: i % 3})
	}
	alone := make([][]int, len(reqs))
	for i, r := range reqs {
		res := wait(t, s.Submit(r))
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		alone[i] = res.Tokens
	}
	// Submit does not block: the whole flood is queued at once, however goroutines run
	chans := make([]<-chan Result, len(reqs))
	for i, r := range reqs {
		chans[i] = s.Submit(r)
	}
	got := make([]Result, len(reqs))
	for i, c := range chans {
		got[i] = wait(t, c)
	}
	preempted := 0
	for i, res := range got {
		if res.Err != nil {
			t.Fatalf("request %d: %v", i, res.Err)
		}
		if !slices.Equal(res.Tokens, alone[i]) {
			t.Errorf("request %d (preempted %d times): %v, without preemption %v", i, res.Preempted, res.Tokens, alone[i])
		}
		preempted += res.Preempted
	}
	t.Logf("%d preemptions", preempted)
	if preempted == 0 {
		t.Error("the flood caused no preemption: the test does not test it")
	}
	s.Do(func() error {
		if n := m.Pool().InUse(); n != 0 {
			t.Errorf("%d pages in use", n)
		}
		return nil
	})
}

// A request cancelled mid-generation ends within a step with its tokens so far, and its
// pages come back at once; the scheduler goes on serving.
func TestCancelFreesPages(t *testing.T) {
	m, s := setup(t, 40, refLimits, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	c := s.Submit(&Request{Ctx: ctx, Prompt: []int{5, 6, 7}, MaxNew: 100, K: 3, Emit: func(int) bool {
		if n++; n == 5 {
			cancel()
		}
		return true
	}})
	res := wait(t, c)
	if res.Err != nil || res.Finish != spec.FinishCancelled || len(res.Tokens) < 5 || len(res.Tokens) > 5+4 {
		t.Fatalf("cancelled: %d tokens, finish %q, %v", len(res.Tokens), res.Finish, res.Err)
	}
	s.Do(func() error {
		if n := m.Pool().InUse(); n != 0 {
			t.Errorf("%d pages in use after the cancel", n)
		}
		return nil
	})
	if res := wait(t, s.Submit(&Request{Ctx: context.Background(), Prompt: []int{5}, MaxNew: 3})); res.Err != nil || len(res.Tokens) != 3 {
		t.Fatalf("after the cancel: %+v", res)
	}
}

// Close ends running requests (cancelled, with their tokens) and queued ones (ErrClosed);
// later submissions get ErrClosed.
func TestCloseDrains(t *testing.T) {
	lim := refLimits
	lim.MaxSeqs = 2
	_, s := setup(t, 40, lim, Options{})
	started := make(chan struct{})
	var once sync.Once
	var cs []<-chan Result
	for i := 0; i < 5; i++ {
		cs = append(cs, s.Submit(&Request{Ctx: context.Background(), Prompt: []int{1 + i}, MaxNew: 150,
			Emit: func(int) bool { once.Do(func() { close(started) }); return true }}))
	}
	<-started
	s.Close()
	cancelled, closed := 0, 0
	for _, c := range cs {
		res := wait(t, c)
		switch {
		case res.Finish == spec.FinishCancelled && res.Err == nil:
			cancelled++
		case errors.Is(res.Err, ErrClosed):
			closed++
		default:
			t.Errorf("after Close: %+v", res)
		}
	}
	if cancelled == 0 || closed == 0 {
		t.Errorf("Close: %d cancelled, %d refused", cancelled, closed)
	}
	if res := wait(t, s.Submit(&Request{Ctx: context.Background(), Prompt: []int{1}, MaxNew: 2})); !errors.Is(res.Err, ErrClosed) {
		t.Fatalf("submit after Close: %+v", res)
	}
}

// Requests the scheduler cannot take are refused at Submit with a clear error.
func TestSubmitRefusals(t *testing.T) {
	_, s := setup(t, 40, refLimits, Options{})
	bg := context.Background()
	for name, r := range map[string]*Request{
		"no context": {Prompt: []int{1}, MaxNew: 1},
		"empty":      {Ctx: bg, MaxNew: 1},
		"too long":   {Ctx: bg, Prompt: make([]int, cfg.MaxSeq), MaxNew: 1},
		"max new 0":  {Ctx: bg, Prompt: []int{1}},
	} {
		if res := wait(t, s.Submit(r)); res.Err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestNoCgo: the scheduler links no cgo package: it plans and runs without a device (the
// device model is one Target among others).
func TestNoCgo(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .CgoFiles}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Fatalf("spec/sched depends on cgo packages:\n%s", s)
	}
}

// Drafts a step cannot verify are dropped, not sent to the target: more than asked for,
// tokens outside the vocabulary, or a q of the wrong size.
func TestCheckDrafts(t *testing.T) {
	const V = 5
	lim := batch.Limits{Vocab: V}
	q := make([]float32, V)
	for _, tc := range []struct {
		name string
		p    spec.Proposal
		lim  batch.Limits
		ok   bool
	}{
		{"one-hot", spec.Proposal{K: 2, Drafts: []int{1, 4}}, lim, true},
		{"with q", spec.Proposal{K: 2, Drafts: []int{1}, Q: q}, lim, true},
		{"too many", spec.Proposal{K: 1, Drafts: []int{1, 2}}, lim, false},
		{"outside the vocabulary", spec.Proposal{K: 1, Drafts: []int{V}}, lim, false},
		{"q of the wrong size", spec.Proposal{K: 2, Drafts: []int{1, 2}, Q: q}, lim, false},
		{"q without room for it on the target (verified one-hot)", spec.Proposal{K: 2, Drafts: []int{1}, Q: q}, batch.Limits{Vocab: V, NoDraftQ: true}, true},
	} {
		if err := checkDrafts(tc.p, tc.lim); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
