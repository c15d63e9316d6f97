package sched

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/spec"
)

// fakeTarget is a pure-Go Target: its "model" emits next(ctx) after each context, so the
// scheduler's batching, paging, preemption and speculation run without a model. It keeps
// each sequence's tokens beside its pages, as the KV cache would.
type fakeTarget struct {
	pool    *kv.PagePool
	lim     batch.Limits
	written map[int][]int // page -> the token in each of its slots
	steps   int
	rows    int           // rows of all steps
	prefill time.Duration // how long a step that carries a prompt chunk takes
}

func newFakeTarget(pages, pageSize int) *fakeTarget {
	return &fakeTarget{pool: kv.NewPagePool(pages, pageSize), written: map[int][]int{},
		lim: batch.Limits{MaxSeq: 96, Vocab: 50, MaxSeqs: 8, MaxLogitRows: 32, MaxDraft: 8, StepRows: 24}}
}

// next is the fake model: the token after ctx.
func next(ctx []int) int { return (ctx[len(ctx)-1]*31 + len(ctx)*7 + 3) % 50 }

func (t *fakeTarget) Pool() *kv.PagePool   { return t.pool }
func (t *fakeTarget) Limits() batch.Limits { return t.lim }

// Step checks the batch as the device model does (pages, rows, sequences), then appends each
// sequence's tokens and verifies its drafts against next.
func (t *fakeTarget) Step(steps []batch.SeqStep) ([]batch.StepOut, error) {
	need, rows, logits := 0, 0, 0
	for _, st := range steps {
		need += st.Seq.PagesNeeded(st.Seq.Len() + len(st.Tokens))
		rows += len(st.Tokens)
		if st.Sample {
			logits += st.NDraft + 1
		}
	}
	switch {
	case len(steps) > t.lim.MaxSeqs || rows > t.lim.StepRows || logits > t.lim.MaxLogitRows:
		return nil, fmt.Errorf("%w: %d sequences, %d rows, %d logits rows", batch.ErrBadInput, len(steps), rows, logits)
	case need > t.pool.Free():
		return nil, fmt.Errorf("%w: %d pages needed, %d free", kv.ErrPoolExhausted, need, t.pool.Free())
	}
	t.steps++
	for _, st := range steps {
		if len(st.Tokens) > st.NDraft+1 { // more rows than a verify step's: a prompt chunk
			time.Sleep(t.prefill)
			break
		}
	}
	outs := make([]batch.StepOut, len(steps))
	for i, st := range steps {
		before := st.Seq.Len()
		if err := st.Seq.Reserve(before + len(st.Tokens)); err != nil {
			panic(err) // counted above
		}
		st.Seq.Commit(before + len(st.Tokens))
		ps := t.pool.PageSize
		for p, tok := range st.Tokens {
			page := st.Seq.Pages()[(before+p)/ps]
			if t.written[page] == nil {
				t.written[page] = make([]int, ps)
			}
			t.written[page][(before+p)%ps] = tok
		}
		toks := make([]int, before+len(st.Tokens)) // what the sequence's pages hold
		for p := range toks {
			toks[p] = t.written[st.Seq.Pages()[p/ps]][p%ps]
		}
		t.rows += len(st.Tokens)
		if !st.Sample {
			continue
		}
		first := len(toks) - st.NDraft // the context of row 0 ends here
		for j := 0; j <= st.NDraft; j++ {
			want := next(toks[:first+j])
			outs[i].Tokens = append(outs[i].Tokens, want)
			if j == st.NDraft || toks[first+j] != want {
				break
			}
		}
	}
	return outs, nil
}

// oracle drafts next's own continuation (every draft passes) but for a wrong token at
// position wrongAt of each proposal (-1: none). It is its own method and drafter.
type oracle struct{ wrongAt int }

func (o oracle) Name() string                      { return "oracle" }
func (o oracle) NewDrafter() (spec.Drafter, error) { return o, nil }
func (o oracle) Release()                          {}
func (o oracle) Keep() batch.Slot                  { return 0 }
func (o oracle) Accept([]int) error                { return nil }
func (o oracle) Propose(ps []spec.Proposal) error {
	for i, p := range ps {
		c := slices.Clone(p.Ctx)
		var out []int
		for j := range p.K {
			t := next(c)
			if j == o.wrongAt {
				t = (t + 1) % 50
			}
			out, c = append(out, t), append(c, t)
		}
		ps[i].Drafts = out
	}
	return nil
}

// want is what a request generates on the fake: next's continuation of the prompt.
func want(prompt []int, n int) []int {
	c := slices.Clone(prompt)
	for range n {
		c = append(c, next(c))
	}
	return c[len(prompt):]
}

func runFake(t *testing.T, target *fakeTarget, meth spec.Method, reqs []*Request) []Result {
	t.Helper()
	return runFakeWith(t, target, meth, reqs, nil)
}

// runFakeWith runs reqs on a scheduler over target (speculating with meth, which may be nil),
// telling onStep about every step, and checks that the pool ends with no page in use.
func runFakeWith(t *testing.T, target *fakeTarget, meth spec.Method, reqs []*Request, onStep func(StepInfo)) []Result {
	t.Helper()
	s := New(target, meth, Options{StepTokens: 16, OnStep: onStep})
	defer s.Close()
	// every request is queued before the loop starts, so the first step sees the whole load
	// on any machine, however the goroutines are scheduled
	chans := make([]<-chan Result, len(reqs))
	for i, r := range reqs {
		chans[i] = s.Submit(r)
	}
	go s.Run()
	got := make([]Result, len(reqs))
	for i, c := range chans {
		got[i] = wait(t, c)
	}
	s.Do(func() error {
		if n := target.pool.InUse(); n != 0 {
			t.Errorf("%d pages in use after all requests", n)
		}
		return nil
	})
	return got
}

// On the pure-Go fake with a pool far too small for the load: every request completes with
// its exact continuation, through waiting, chunked prompts, preemption and recomputation,
// drafting or not; the pool ends empty.
func TestFakePreemptionExact(t *testing.T) {
	target := newFakeTarget(9, 4) // 36 slots; a request needs up to 30
	var reqs []*Request
	for i := range 10 {
		prompt := make([]int, 3+i%7*3)
		for j := range prompt {
			prompt[j] = (i*13 + j*5) % 50
		}
		reqs = append(reqs, &Request{Ctx: context.Background(), Prompt: prompt, MaxNew: 8 + i%5, K: i % 4, FixedK: true})
	}
	got := runFake(t, target, oracle{wrongAt: 2}, reqs)
	preempted := 0
	for i, r := range got {
		if r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
		if w := want(reqs[i].Prompt, reqs[i].MaxNew); !slices.Equal(r.Tokens, w) {
			t.Errorf("request %d: %v, want %v", i, r.Tokens, w)
		}
		preempted += r.Preempted
	}
	if preempted == 0 {
		t.Error("no preemption: the pool was not too small")
	}
}

// A preempted sequence keeps its suffix drafter (it lives on the host), so its output reaches
// the global tree once and whole when it ends: as many outputs as requests, as many tokens as
// they generated. (A fresh drafter for the recomputation gave the tree the output twice in
// part: what was generated before the preemption, then that again with the rest.)
func TestSuffixPreemptedOutputOnce(t *testing.T) {
	cfg := spec.Config{Mode: "suffix", NumSpeculativeTokens: 4}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	method := spec.NewSuffix(cfg)
	var reqs []*Request
	for i := range 10 {
		prompt := make([]int, 3+i%7*3)
		for j := range prompt {
			prompt[j] = (i*13 + j*5) % 50
		}
		reqs = append(reqs, &Request{Ctx: context.Background(), Prompt: prompt, MaxNew: 8 + i%5, K: 4})
	}
	got := runFake(t, newFakeTarget(9, 4), method, reqs)
	preempted, tokens := 0, 0
	for i, r := range got {
		if r.Err != nil || !slices.Equal(r.Tokens, want(reqs[i].Prompt, reqs[i].MaxNew)) {
			t.Fatalf("request %d: %v %v", i, r.Tokens, r.Err)
		}
		preempted += r.Preempted
		tokens += len(r.Tokens)
	}
	if preempted == 0 {
		t.Fatal("no preemption: the pool was not too small")
	}
	if outs, toks := method.Cached(); outs != len(reqs) || toks != tokens {
		t.Errorf("global tree holds %d outputs of %d tokens, want %d of %d (%d preemptions)", outs, toks, len(reqs), tokens, preempted)
	}
}

// With drafts that always pass and a fixed k, each verify step emits k+1 tokens (less at the
// end), and the metrics say so.
func TestFakeSpeculationSteps(t *testing.T) {
	for _, k := range []int{1, 3, 8} {
		target := newFakeTarget(64, 4)
		r := &Request{Ctx: context.Background(), Prompt: []int{1, 2, 3}, MaxNew: 30, K: k, FixedK: true}
		res := runFake(t, target, oracle{wrongAt: -1}, []*Request{r})[0]
		if res.Err != nil || !slices.Equal(res.Tokens, want(r.Prompt, r.MaxNew)) {
			t.Fatalf("k=%d: %v %v", k, res.Tokens, res.Err)
		}
		m := res.Metrics
		if m.DraftTokens != m.AcceptedTokens || m.MeanAcceptanceLength() < float64(k+1)*0.7 {
			t.Errorf("k=%d: %d drafts, %d accepted, mean acceptance length %.2f", k, m.DraftTokens, m.AcceptedTokens, m.MeanAcceptanceLength())
		}
		// the prefill's step, then ceil((30 - 1) / (k + 1)) verify steps
		if wantSteps := 1 + (29+k)/(k+1); target.steps != wantSteps {
			t.Errorf("k=%d: %d steps, want %d", k, target.steps, wantSteps)
		}
	}
}

// A sequence whose probes are rejected is probed after spec.Memory (20) steps without drafts,
// then after 40, 80, ... up to spec.ProbeMaxWait; accepted probes halve the wait back to 20,
// and once the plan drafts by itself probes come every 20 steps again.
func TestProbeBackoff(t *testing.T) {
	probesOf := func(st *seqState, accepted func(step int) int) []int {
		var probes []int
		for step := 0; step < 2000; step++ {
			k := 0
			if st.probing() {
				k = 1
				probes = append(probes, step)
			}
			st.planned(k)
			if k > 0 {
				st.probeOutcome(accepted(step))
				st.idle = 0
			} else {
				st.idle++
			}
		}
		return probes
	}
	var st seqState
	want := []int{20, 61, 142, 303, 624, 1137, 1650}
	if probes := probesOf(&st, func(int) int { return 0 }); !slices.Equal(probes, want) {
		t.Fatalf("rejected probes at steps %v, want %v", probes, want)
	}
	st.idle = 0
	st.planned(3) // the plan drafts again by itself
	if st.probe != spec.Memory {
		t.Fatalf("after drafting by plan the next probe waits %d steps, want %d", st.probe, spec.Memory)
	}
	// rejected until step 200, accepted after: the waits halve back to 20
	probes := probesOf(&seqState{}, func(step int) int { return min(1, max(0, step-200)) })
	want = []int{20, 61, 142, 303, 384, 425, 446, 467}
	if !slices.Equal(probes[:len(want)], want) {
		t.Fatalf("probes accepted past step 200 at steps %v, want %v...", probes, want)
	}
}

// With the prefix cache: requests sharing prefixes (identical prompts, prompts extending
// others' prompts and outputs, as chat turns do) each get their exact continuation, through
// a pool small enough to preempt; cached pages are reused and the pool ends with none in use.
func TestFakePrefixCacheExact(t *testing.T) {
	target := newFakeTarget(14, 4) // 56 slots
	target.pool.EnablePrefixCaching()
	base := []int{3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 32}
	turn1 := append(slices.Clone(base), want(base, 10)...)
	var reqs []*Request
	for i := range 12 {
		var prompt []int
		switch i % 3 {
		case 0:
			prompt = base
		case 1:
			prompt = append(slices.Clone(turn1), 1+i, 2)
		default:
			prompt = append(slices.Clone(base[:4+i%5]), i)
		}
		reqs = append(reqs, &Request{Ctx: context.Background(), Prompt: prompt, MaxNew: 10 + i%4, K: i % 4, FixedK: i%2 == 0})
	}
	var cached, prefill int
	got := runFakeWith(t, target, oracle{wrongAt: 1}, reqs, func(st StepInfo) { cached += st.CachedTokens; prefill += st.PrefillRows })
	preempted := 0
	for i, r := range got {
		if r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
		if w := want(reqs[i].Prompt, reqs[i].MaxNew); !slices.Equal(r.Tokens, w) {
			t.Errorf("request %d: %v, want %v", i, r.Tokens, w)
		}
		preempted += r.Preempted
	}
	q, h := target.pool.PrefixStats()
	t.Logf("%d preemptions; %d prompt tokens computed, %d taken from the cache (%d of %d looked up)", preempted, prefill, cached, h, q)
	if cached == 0 || int64(cached) != h {
		t.Errorf("the prefix cache served %d tokens (stats %d)", cached, h)
	}
	if preempted == 0 {
		t.Error("no preemption: the pool was not too small")
	}
}

// n choices of one prompt, submitted together, compute the prompt once: the first computes
// it, the others wait for its pages and take them, computing only what is left of a page.
func TestChoicesPrefillOnce(t *testing.T) {
	prompt := make([]int, 40)
	for i := range prompt {
		prompt[i] = (i*7 + 3) % 50
	}
	for _, caching := range []bool{false, true} {
		target := newFakeTarget(64, 4)
		if caching {
			target.pool.EnablePrefixCaching()
		}
		var reqs []*Request
		for range 4 {
			reqs = append(reqs, &Request{Ctx: context.Background(), Prompt: prompt, MaxNew: 5})
		}
		prefill := 0
		got := runFakeWith(t, target, nil, reqs, func(st StepInfo) { prefill += st.PrefillRows })
		for i, r := range got {
			if r.Err != nil || !slices.Equal(r.Tokens, want(prompt, 5)) {
				t.Fatalf("choice %d: %v %v", i, r.Tokens, r.Err)
			}
		}
		want := 4 * 40
		if caching {
			want = 40 + 3*(40-36) // 36 = the whole pages of the first 39 tokens
		}
		if prefill != want {
			t.Errorf("prefix caching %v: %d prompt rows computed, want %d", caching, prefill, want)
		}
	}
}

// A result's StepTime is its verify steps' time: the steps that fed its prompt are left out,
// so that StepTime/Steps is what a verify step took (wspec bench's step ms). The fake's
// three prompt chunks take 300 ms each and its verify steps microseconds; counting the chunks
// would make at least 900 ms, which a few fake steps reach on no machine however busy.
func TestStepTimeLeavesPromptOut(t *testing.T) {
	target := newFakeTarget(64, 4)
	target.prefill = 300 * time.Millisecond
	prompt := make([]int, 40) // StepTokens 16: three chunks
	for j := range prompt {
		prompt[j] = j * 3 % 50
	}
	r := runFake(t, target, oracle{wrongAt: 2}, []*Request{{Ctx: context.Background(), Prompt: prompt, MaxNew: 12, K: 4}})[0]
	if r.Err != nil || !slices.Equal(r.Tokens, want(prompt, 12)) {
		t.Fatalf("tokens %v, error %v", r.Tokens, r.Err)
	}
	if m := r.Metrics; m.Steps == 0 || m.StepTime >= 3*target.prefill {
		t.Errorf("%d verify steps took %v in all: the prompt's steps (%v each) were counted", m.Steps, m.StepTime, target.prefill)
	}
}
