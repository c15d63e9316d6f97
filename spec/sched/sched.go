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
	"math"
	"sync"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
)

// ErrClosed is returned for requests submitted to (or still queued in) a closed scheduler.
var ErrClosed = errors.New("scheduler closed")

// Request is one generation.
type Request struct {
	Ctx      context.Context // cancelled: the request ends within a step (FinishCancelled)
	Prompt   []int           // at least one token, shorter than the context
	MaxNew   int             // new tokens at most (>= 1)
	Sampling model.Sampling
	Bias     map[int]float32 // logit bias: token -> added to its logit before sampling
	Stop     []int           // token ids that end it (not in the output)
	// K is the most tokens drafted per step (0: no speculation; the scheduler drafts fewer
	// when they do not pay, unless FixedK).
	K      int
	FixedK bool
	// Emit, if set, sees each new token as soon as it is known, on the scheduler's goroutine
	// (it must not block); returning false ends the request (FinishStop), that token included.
	Emit func(tok int) bool
}

// Result is a finished request.
type Result struct {
	Tokens     []int                // generated, without the stop token
	Logprobs   []model.TokenLogprob // each token's, with Sampling.Logprobs
	Finish     spec.FinishReason
	Metrics    spec.Metrics
	Preempted  int           // times its pages were taken back and its tokens recomputed
	Queued     time.Duration // from Submit to its first step
	FirstToken time.Duration // from Submit to its first token
	Err        error
}

// Options size the scheduler.
type Options struct {
	// StepTokens is the most rows in a step (decoding rows, drafts and prompt chunks); 0:
	// the model's PrefillChunk.
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
	Drafts, Accepted int           // draft tokens verified and accepted in the step
	AcceptedAt       []int         // accepted drafts per position
	Preempted        int           // sequences preempted before the step
	PagesUsed, Pages int           // KV pages in use after the step, of the pool
	Time             time.Duration // the step's wall time (drafting excluded)
}

// Target is the model the scheduler runs: batched steps over sequences of its page pool.
// Model adapts a device model; the tests also run the scheduler on a pure-Go fake.
type Target interface {
	// Step runs one batched step; see model.Model.Step.
	Step(batch []model.SeqStep) ([]model.StepOut, error)
	// NewSeq starts an empty sequence on the pool.
	NewSeq() Seq
	Pool() *runtime.PagePool
	Limits() Limits
}

// Seq is one sequence of a Target: its KV pages, and the target a drafter of it reads (the
// drafter heads need a *model.Session).
type Seq interface {
	spec.Target
	Sequence() *runtime.Sequence
	Release()
}

// Limits are a target's sizes.
type Limits struct {
	MaxSeq, Vocab int // context length, vocabulary
	MaxSeqs       int // sequences in a step
	MaxLogitRows  int // rows sampled in a step
	MaxDraft      int // drafts one sequence verifies in a step
	StepRows      int // rows in a step, all sequences
}

// Model is the Target of a model on the device.
func Model(m *model.Model) Target { return modelTarget{m} }

type modelTarget struct{ m *model.Model }

func (t modelTarget) Step(b []model.SeqStep) ([]model.StepOut, error) { return t.m.Step(b) }
func (t modelTarget) NewSeq() Seq                                     { return t.m.NewSession() }
func (t modelTarget) Pool() *runtime.PagePool                         { return t.m.Pool }
func (t modelTarget) Limits() Limits {
	o, c := t.m.Opts, t.m.Cfg
	return Limits{MaxSeq: c.MaxSeq, Vocab: c.Vocab, MaxSeqs: o.MaxSeqs, MaxLogitRows: o.MaxLogitRows, MaxDraft: o.MaxDraft, StepRows: o.PrefillChunk}
}

// Scheduler runs requests on a target model. See the package comment.
type Scheduler struct {
	m      Target
	lim    Limits
	pool   *runtime.PagePool
	method spec.Method // nil: no speculation
	o      Options

	do      chan func()
	wake    chan struct{} // a job was submitted
	stopped chan struct{}
	closing context.CancelFunc
	ctx     context.Context

	mu              sync.Mutex // guards what follows
	submitted       []*job     // submitted, not yet taken by the loop
	closed          bool       // the loop has stopped taking jobs
	running, queued int        // the counts Stats reads
}

// job is a request on its way: submitted, waiting, running or done.
type job struct {
	req       *Request
	done      chan Result
	submitted time.Time
	started   bool
	res       Result
	seq       *seqState // while running
	ctx       []int     // prompt and the tokens so far (what a preempted job recomputes)
	adj       *model.Adjustments
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
	j.ctx = append([]int(nil), r.Prompt...)
	j.adj = model.NewAdjustments(r.Sampling, r.Bias, r.Prompt)
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

func (s *Scheduler) check(r *Request) error {
	c := s.lim
	switch {
	case r.Ctx == nil:
		return fmt.Errorf("%w: a request without a context", model.ErrBadInput)
	case len(r.Prompt) == 0:
		return fmt.Errorf("%w: empty prompt", model.ErrBadInput)
	case len(r.Prompt) >= c.MaxSeq:
		return fmt.Errorf("%w: a prompt of %d tokens leaves no room in a context of %d", runtime.ErrContextFull, len(r.Prompt), c.MaxSeq)
	case r.MaxNew < 1:
		return fmt.Errorf("%w: max new tokens %d", model.ErrBadInput, r.MaxNew)
	case r.K < 0 || r.K > min(spec.MaxSpeculativeTokens, s.lim.MaxDraft):
		return fmt.Errorf("%w: %d speculative tokens", model.ErrBadInput, r.K)
	case r.K > 0 && s.method == nil:
		return fmt.Errorf("%w: speculation asked of a scheduler without a drafter", model.ErrBadInput)
	}
	for _, t := range r.Prompt {
		if t < 0 || t >= c.Vocab {
			return fmt.Errorf("%w: token id %d outside the vocabulary of %d", model.ErrBadInput, t, c.Vocab)
		}
	}
	for t, b := range r.Bias {
		if t < 0 || t >= c.Vocab || math.IsNaN(float64(b)) || math.IsInf(float64(b), 0) {
			return fmt.Errorf("%w: logit bias %v of token %d (vocabulary of %d)", model.ErrBadInput, b, t, c.Vocab)
		}
	}
	if n := r.Sampling.TopLogprobs; n < 0 || n > runtime.MaxTopLogprobs {
		return fmt.Errorf("%w: %d top logprobs (0..%d)", model.ErrBadInput, n, runtime.MaxTopLogprobs)
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
