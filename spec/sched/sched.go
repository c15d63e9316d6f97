// Package sched is continuous batching: it runs the requests it is given on one target model
// in shared steps, admitting new sequences between steps while KV pages allow, prefilling
// prompts in chunks beside the decoding sequences, speculating for each sequence as far as it
// pays under the step's load, and preempting (freeing, then recomputing) a sequence when the
// pages run out. One goroutine, Run, owns the device; everything else talks to it.
package sched

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/grammar"
)

// ErrClosed is returned for requests submitted to (or still queued in) a closed scheduler.
var ErrClosed = errors.New("scheduler closed")

// Request is one generation. The engine validated its values where they entered; the
// scheduler does not check them again.
type Request struct {
	Ctx      context.Context // cancelled: the request ends within a step (FinishCancelled)
	Prompt   []int           // at least one token, shorter than the context
	MaxNew   int             // new tokens at most (>= 1; 0 only with ScorePrompt: score alone)
	Sampling batch.Sampling
	// ScorePrompt asks for each prompt token's logprob after the ones before it (all but the
	// first; Result.PromptLogprobs), with PromptTop (0..batch.MaxTopLogprobs) likeliest tokens
	// each: the raw log-softmax of the model's logits, before any processor. The prompt then
	// runs in steps of at most Limits.MaxDraft scored rows and takes nothing from the prefix
	// cache.
	ScorePrompt bool
	PromptTop   int
	Stop        []int // token ids that end it (not in the output)
	// MinNew holds Stop back until that many tokens are generated (vLLM's min_tokens): they
	// cannot be drawn before, and a step then verifies no draft past that point.
	MinNew int
	// K is the most tokens drafted per step (0: no speculation; the scheduler drafts fewer
	// when they do not pay, unless FixedK).
	K      int
	FixedK bool
	// OneHotDrafts asks the drafter for its argmax drafts, one-hot (Q nil), even where the
	// request samples: exact either way (the rejection sampler verifies one-hot drafts as
	// such); the baseline a benchmark sets a sampling drafter against.
	OneHotDrafts bool
	// Grammar, if set, constrains the output (structured outputs): each sampled row is masked
	// to the tokens it allows, Stop tokens only where its match may end, and the request ends
	// (FinishStop) once it has matched a whole output nothing can continue. The request owns it.
	Grammar *grammar.Matcher
	// Emit, if set, sees each new token as soon as it is known, on the scheduler's goroutine
	// (it must not block); returning false ends the request (FinishStop), that token included.
	Emit func(tok int) bool
}

// Result is a finished request.
type Result struct {
	Tokens   []int                // generated, without the stop token
	Logprobs []batch.TokenLogprob // each token's, with Sampling.Logprobs
	// PromptLogprobs, with ScorePrompt, are Prompt[1:]'s logprobs (complete only when Err is nil).
	PromptLogprobs []batch.TokenLogprob
	Finish         spec.FinishReason
	Metrics        spec.Metrics
	Preempted      int           // times its pages were taken back and its tokens recomputed
	Queued         time.Duration // from Submit to its first step
	FirstToken     time.Duration // from Submit to its first token
	Err            error
}

// Options size the scheduler.
type Options struct {
	// StepTokens is the most rows in a step (decoding rows, drafts and prompt chunks); 0:
	// the target's StepRows.
	StepTokens int
	// Cost is the engine's step cost model (nil: no adaptive speculation; each sequence
	// drafts its K every step).
	Cost *spec.CostModel
	// OnStep, if set, is told about every step (for metrics).
	OnStep func(StepInfo)
}

// StepInfo describes one step.
type StepInfo struct {
	Running, Waiting int
	Rows             int
	PrefillRows      int           // rows of prompt chunks (prompt tokens computed)
	CacheQueries     int           // prompt tokens looked up in the prefix cache since the last step
	CachedTokens     int           // of them, the tokens taken from it
	Drafts, Accepted int           // draft tokens verified and accepted in the step
	AcceptedAt       []int         // accepted drafts per position
	Preempted        int           // sequences preempted before the step
	PagesUsed, Pages int           // KV pages in use after the step, of the pool
	Time             time.Duration // the step's wall time (drafting excluded)
}

// Target is the model the scheduler runs: batched steps over sequences of its page pool.
// *model.Model is the device's; runtime/ref's Model is the pure-Go reference; the tests also
// run the scheduler on a fake.
type Target interface {
	// Step runs one batched step; see model.Model.Step.
	Step(steps []batch.SeqStep) ([]batch.StepOut, error)
	Pool() *kv.PagePool
	Limits() batch.Limits
}

// Scheduler runs requests on a target model. See the package comment.
type Scheduler struct {
	m      Target
	lim    batch.Limits
	pool   *kv.PagePool
	method spec.Method // nil: no speculation
	o      Options
	// acc is what the drafter's drafts have been worth across sequences (the loop's): a new
	// sequence's acceptance starts from it.
	acc spec.Acceptance

	do      chan func()
	wake    chan struct{} // a job was submitted
	stopped chan struct{}
	closing context.CancelFunc
	ctx     context.Context

	mu              sync.Mutex // guards what follows
	submitted       []*job     // submitted, not yet taken by the loop
	closed          bool       // the loop has stopped taking jobs
	running, queued int        // the counts Stats reads
	cacheQueries    int        // prefix cache tokens looked up and found since the last step (the loop's)
	cachedTokens    int
}

// job is a request on its way: submitted, waiting, running or done.
type job struct {
	req       *Request
	done      chan Result
	submitted time.Time
	started   bool
	res       Result
	seq       *seqState        // while running
	kept      spec.HostDrafter // a preempted job's drafter, for its recomputation
	ctx       []int            // prompt and the tokens so far (what a preempted job recomputes)
	keys      []uint64         // the prefix keys of its prompt's full pages (prefix caching)
	adj       *batch.Adjustments
}

// scoring says whether the job's prompt is still being scored (Request.ScorePrompt).
func (j *job) scoring() bool {
	return j.req.ScorePrompt && len(j.res.PromptLogprobs) < len(j.req.Prompt)-1
}

// New makes a scheduler on m (speculating with method when it is not nil). Start it with Run.
func New(m Target, method spec.Method, o Options) *Scheduler {
	lim := m.Limits()
	if o.StepTokens <= 0 || o.StepTokens > lim.StepRows {
		o.StepTokens = lim.StepRows
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Scheduler{m: m, lim: lim, pool: m.Pool(), method: method, o: o, do: make(chan func()), wake: make(chan struct{}, 1),
		stopped: make(chan struct{}), closing: cancel, ctx: ctx}
}

// Submit queues r and returns the channel its result arrives on (once). A request the
// scheduler cannot take gets its error there.
func (s *Scheduler) Submit(r *Request) <-chan Result {
	j := &job{req: r, done: make(chan Result, 1), submitted: time.Now()}
	if err := s.check(r); err != nil {
		j.done <- Result{Err: err}
		return j.done
	}
	if r.MaxNew == 0 && len(r.Prompt) == 1 { // nothing to score, nothing to generate
		j.done <- Result{Finish: spec.FinishLength}
		return j.done
	}
	j.ctx = append([]int(nil), r.Prompt...)
	j.adj = batch.NewAdjustments(r.Sampling, r.Prompt)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		j.done <- Result{Err: ErrClosed}
		return j.done
	}
	s.submitted = append(s.submitted, j)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return j.done
}

// take returns the jobs submitted since the last call; with close, it also stops taking more.
func (s *Scheduler) take(close bool) []*job {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.submitted
	s.submitted = nil
	s.closed = s.closed || close
	return js
}

// check refuses what the scheduler cannot run at all. The request's values were validated
// where they entered (spec/engine); these are the scheduler's own limits.
func (s *Scheduler) check(r *Request) error {
	switch {
	case r.Ctx == nil:
		return fmt.Errorf("%w: a request without a context", batch.ErrBadInput)
	case len(r.Prompt) == 0:
		return fmt.Errorf("%w: empty prompt", batch.ErrBadInput)
	case len(r.Prompt) >= s.lim.MaxSeq:
		return fmt.Errorf("%w: a prompt of %d tokens leaves no room in a context of %d", kv.ErrContextFull, len(r.Prompt), s.lim.MaxSeq)
	case r.MaxNew < 1 && !(r.MaxNew == 0 && r.ScorePrompt):
		return fmt.Errorf("%w: max new tokens %d", batch.ErrBadInput, r.MaxNew)
	}
	return nil
}

// Do runs f on the scheduler's goroutine between two steps (exclusive use of the device) and
// returns its error, or ErrClosed.
func (s *Scheduler) Do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case s.do <- func() { errc <- f() }:
		return <-errc
	case <-s.stopped:
		return ErrClosed
	}
}

// Close stops the scheduler: the running and queued requests end (FinishCancelled, with their
// tokens so far; queued ones with ErrClosed), and Run returns. It waits for that.
func (s *Scheduler) Close() {
	s.closing()
	<-s.stopped
}

// Stats are the scheduler's current load.
type Stats struct{ Running, Waiting int }

// Stats returns the current load (as of the last step).
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Running: s.running, Waiting: s.queued}
}

// Generate runs one request alone on a scheduler of its own over target (speculating with
// method when it is not nil) and returns its result: the loop for one sequence, as tests and
// the CPU replay of spec/distill use it.
func Generate(target Target, method spec.Method, o Options, r *Request) Result {
	s := New(target, method, o)
	c := s.Submit(r)
	go s.Run()
	res := <-c
	s.Close()
	return res
}
