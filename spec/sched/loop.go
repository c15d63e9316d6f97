package sched

import (
	"fmt"
	"slices"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/spec"
)

// Run is the scheduler's loop; it returns when Close is called (or ctx is done).
func (s *Scheduler) Run() {
	defer close(s.stopped)
	var waiting, running []*job
	defer func() { s.shutdown(waiting, running) }()
	for {
		for _, j := range s.take(false) {
			j.keys = s.pool.Keys(j.req.Prompt) // on the loop's goroutine, which owns the pool
			waiting = append(waiting, j)
		}
		if len(waiting) == 0 && len(running) == 0 {
			select { // idle: wait for work
			case <-s.wake:
			case f := <-s.do:
				f()
			case <-s.ctx.Done():
				return
			}
			continue
		}
	drain:
		for {
			select {
			case f := <-s.do:
				f()
			case <-s.ctx.Done():
				return
			default:
				break drain
			}
		}
		running = s.reap(running)
		waiting = s.reap(waiting)
		waiting, running = s.admit(waiting, running)
		waiting, running = s.step(waiting, running)
		s.mu.Lock()
		s.running, s.queued = len(running), len(waiting)
		s.mu.Unlock()
	}
}

// reap ends the jobs, running or queued, whose context is cancelled.
func (s *Scheduler) reap(jobs []*job) []*job {
	return slices.DeleteFunc(jobs, func(j *job) bool {
		if j.req.Ctx.Err() == nil {
			return false
		}
		s.finish(j, spec.FinishCancelled, nil)
		return true
	})
}

// admit starts queued jobs, oldest first, while the model takes more sequences and the pool
// has the pages of each one's context. A job first takes from the prefix cache the pages its
// context starts with (kv.Sequence.MatchPrefix), which it then need not compute. A job whose
// next uncached page a running job is computing right now (the choices of one request, users
// of one system prompt) waits for it rather than computing it too, so the pages are computed
// once.
func (s *Scheduler) admit(waiting, running []*job) ([]*job, []*job) {
	pool := s.pool
	reserved := 0 // pages the running prompts still need
	pending := map[uint64]bool{}
	for _, j := range running {
		reserved += pagesFor(pool.PageSize, len(j.ctx)+1) - len(j.seq.seq.Pages())
		for i := j.seq.fed / pool.PageSize; i < len(j.keys); i++ {
			pending[j.keys[i]] = true
		}
	}
	for len(waiting) > 0 && len(running) < s.lim.MaxSeqs {
		j := waiting[0]
		need := pagesFor(pool.PageSize, len(j.ctx)+1)
		if need > pool.Pages() {
			waiting = waiting[1:]
			s.finish(j, "", fmt.Errorf("%w: a context of %d tokens needs %d KV pages, the pool has %d",
				kv.ErrPoolExhausted, len(j.ctx)+1, need, pool.Pages()))
			continue
		}
		if waitsFor(pool, j.keys, pending) {
			break
		}
		cached, idle := pool.CachedPrefix(j.ctx, len(j.ctx)-1)
		if j.scoring() { // every row is scored: nothing comes from the cache
			cached, idle = 0, 0
		}
		if need -= cached / pool.PageSize; need+reserved > pool.Free()-idle && len(running) > 0 {
			break
		}
		st := &seqState{seq: pool.NewSequence()}
		st.acc.Seed(&s.acc, spec.SeedDrafts)
		if j.scoring() { // a preempted job scores its prompt again from the start
			j.res.PromptLogprobs = j.res.PromptLogprobs[:0]
		} else {
			st.fed = st.seq.MatchPrefix(j.ctx, len(j.ctx)-1)
		}
		if j.kept != nil {
			st.drafter, j.kept = j.kept, nil
		} else if j.req.K > 0 && s.method != nil {
			d, err := s.method.NewDrafter()
			if err != nil {
				st.seq.Release()
				waiting = waiting[1:]
				s.finish(j, "", err)
				continue
			}
			st.drafter = d
		}
		j.seq = st
		if !j.started {
			j.started = true
			j.res.Queued = time.Since(j.submitted)
		}
		if pool.PrefixCaching() {
			s.cacheQueries += len(j.ctx) - 1
			s.cachedTokens += st.fed
		}
		reserved += need
		waiting, running = waiting[1:], append(running, j)
		for i := st.fed / pool.PageSize; i < len(j.keys); i++ {
			pending[j.keys[i]] = true
		}
	}
	return waiting, running
}

// waitsFor reports whether the first of keys the prefix cache lacks is being computed.
func waitsFor(pool *kv.PagePool, keys []uint64, pending map[uint64]bool) bool {
	for _, k := range keys {
		if !pool.Cached(k) {
			return pending[k]
		}
	}
	return false
}

func pagesFor(pageSize, tokens int) int { return (tokens + pageSize - 1) / pageSize }

// step plans, runs and settles one step of the running jobs; it returns the queues, with the
// jobs it preempted back at the front of waiting.
func (s *Scheduler) step(waiting, running []*job) ([]*job, []*job) {
	if len(running) == 0 {
		return waiting, running
	}
	preempted := 0
	var p stepPlan
	for {
		p = s.plan(running)
		if p.pages() <= s.pool.Free() {
			break
		}
		if len(running) == 1 { // alone: it drafts nothing rather than fail (or fails alone)
			p.props, p.at = nil, nil
			break
		}
		// Out of pages: the newest running job gives its pages back and waits to be recomputed.
		victim := running[len(running)-1]
		running = running[:len(running)-1]
		s.preempt(victim)
		waiting = append([]*job{victim}, waiting...)
		preempted++
	}
	steps, in := p.steps, p.in
	if len(steps) == 0 {
		return waiting, running
	}
	s.propose(p.props, p.at, steps, in)
	s.constrain(steps, in)
	for i, j := range in[:p.decoding] {
		if len(steps[i].Tokens) > 1 {
			j.seq.idle = 0
		} else {
			j.seq.idle++
		}
	}
	t0 := time.Now()
	outs, err := s.m.Step(steps)
	took := time.Since(t0)
	if err != nil {
		// A lone sequence that cannot fit, or a device error: end the jobs of the step.
		for _, j := range in {
			s.finish(j, "", err)
		}
		running = slices.DeleteFunc(running, func(j *job) bool { return j.seq == nil })
		return waiting, running
	}
	info := StepInfo{Rows: 0, Preempted: preempted, Time: took, Pages: s.pool.Pages()}
	info.CacheQueries, info.CachedTokens, s.cacheQueries, s.cachedTokens = s.cacheQueries, s.cachedTokens, 0, 0
	for i, j := range in {
		info.Rows += len(steps[i].Tokens)
		if i >= p.decoding {
			info.PrefillRows += len(steps[i].Tokens)
		}
		if i < p.decoding { // a verify step's time; a prompt chunk's is not one
			j.res.Metrics.StepTime += took
		}
		s.settle(j, steps[i], outs[i], &info)
		if j.seq != nil { // its KV is final up to fed: the full pages join the prefix cache
			j.seq.seq.Register(j.ctx[:j.seq.fed])
		}
	}
	if s.o.Cost != nil {
		s.o.Cost.ObserveStep(info.Rows, took)
	}
	running = slices.DeleteFunc(running, func(j *job) bool { return j.seq == nil })
	info.Running, info.Waiting, info.PagesUsed = len(running), len(waiting), s.pool.InUse()
	if s.o.OnStep != nil {
		s.o.OnStep(info)
	}
	return waiting, running
}

// plan builds the step's batch: each decoding job's last token and its drafts, and chunks
// of the prompts being prefilled, within the step's rows and sampled rows.
//
// The drafts are not asked for yet: the step counts its pages with the planned draft lengths
// (an upper bound), may preempt and plan again, and only then calls propose once.
func (s *Scheduler) plan(running []*job) stepPlan {
	budget, logitBudget := s.o.StepTokens, s.lim.MaxLogitRows
	var decoding []*job
	for _, j := range running {
		if j.seq.fed == len(j.ctx)-1 {
			decoding = append(decoding, j)
		}
	}
	// Draft lengths: as far as they pay (or K each without a cost model).
	ks := make([]int, len(decoding))
	plans := make([]spec.PlanSeq, len(decoding))
	for i, j := range decoding {
		room := min(spec.DraftRoom(j.req.MaxNew, len(j.res.Tokens), s.lim.MaxSeq, len(j.ctx)), s.lim.MaxDraft)
		if n := len(j.res.Tokens); n < j.req.MinNew { // every row of the step holds Stop back
			room = min(room, j.req.MinNew-1-n)
		}
		plans[i] = spec.PlanSeq{MaxK: min(j.req.K, room)}
		if j.seq.drafter != nil && !j.req.FixedK {
			plans[i].Acc = &j.seq.acc
		}
	}
	if s.o.Cost != nil {
		prompts := 0 // the prompt rows the step will carry beside the decoding rows
		for _, j := range running {
			if st := j.seq; st.fed < len(j.ctx)-1 {
				prompts += len(j.ctx) - st.fed
			}
		}
		prompts = max(0, min(prompts, budget-len(decoding)))
		ks = s.o.Cost.Plan(plans, len(decoding), prompts, func(i int) bool { return decoding[i].seq.probing() })
		for i, j := range decoding {
			j.seq.planned(ks[i])
		}
	}
	for i, j := range decoding { // no cost model, or a fixed draft length: K every step
		if j.seq.drafter != nil && (s.o.Cost == nil || j.req.FixedK) {
			ks[i] = plans[i].MaxK
		}
	}
	// Each decoding job's row and drafts, within the step's rows and sampled rows; the
	// drafts of every job that drafts come from one Propose call.
	var steps []batch.SeqStep
	var in []*job
	var props []spec.Proposal
	var propJobs []int // props[p] is for steps[propJobs[p]]
	ndec := 0
	for i, j := range decoding {
		if budget < 1 || logitBudget < 1 {
			break
		}
		st := j.seq
		k := min(ks[i], budget-1, logitBudget-1)
		if k > 0 && st.drafter != nil {
			ds := j.req.Sampling
			if j.req.OneHotDrafts {
				ds.Temperature = 0 // the drafter's argmax
			}
			props = append(props, spec.Proposal{Drafter: st.drafter, Ctx: j.ctx, K: k, Sampling: ds})
			propJobs = append(propJobs, len(steps))
		} else {
			k = 0
		}
		st.decoding = true
		j.holdStops()
		budget -= 1 + k
		logitBudget -= 1 + k
		steps = append(steps, batch.SeqStep{Seq: st.seq, Tokens: []int{j.ctx[len(j.ctx)-1]}, Sample: true,
			Sampling: j.req.Sampling, Adj: j.adj.List(), Keep: keep(st)})
		in = append(in, j)
		ndec++
	}
	for _, j := range running {
		st := j.seq
		if st.fed >= len(j.ctx)-1 || budget < 1 {
			continue
		}
		st.decoding = false
		if j.scoring() { // n rows scored, and the next token as the last one's draft
			n := min(budget-1, logitBudget-1, s.lim.MaxDraft, len(j.ctx)-1-st.fed)
			if n < 1 {
				continue
			}
			steps = append(steps, batch.SeqStep{Seq: st.seq, Tokens: j.ctx[st.fed : st.fed+n+1], NDraft: n, Sample: true,
				Score: true, Sampling: batch.Sampling{Logprobs: true, TopLogprobs: j.req.PromptTop}, Keep: keep(st)})
			in = append(in, j)
			budget, logitBudget = budget-n-1, logitBudget-n-1
			continue
		}
		n := min(budget, len(j.ctx)-st.fed)
		last := st.fed+n == len(j.ctx)
		if last && logitBudget < 1 {
			n--
			last = false
		}
		if n < 1 {
			continue
		}
		var adj []batch.Adj
		if last {
			j.holdStops()
			adj = j.adj.List()
		}
		steps = append(steps, batch.SeqStep{Seq: st.seq, Tokens: j.ctx[st.fed : st.fed+n],
			Sample: last, Sampling: j.req.Sampling, Adj: adj, Keep: keep(st)})
		in = append(in, j)
		budget -= n
		if last {
			logitBudget--
		}
	}
	return stepPlan{steps: steps, in: in, props: props, at: propJobs, decoding: ndec}
}

// stepPlan is a planned step: its rows (steps[i] is job in[i]'s; the first decoding of them
// feed their last token), and the drafts to ask for (props[p] goes after steps[at[p]]'s
// token).
type stepPlan struct {
	steps    []batch.SeqStep
	in       []*job
	props    []spec.Proposal
	at       []int
	decoding int
}

// pages counts the free pages the plan takes at most (with every planned draft).
func (p stepPlan) pages() int {
	extra := make([]int, len(p.steps))
	for i, pr := range p.props {
		extra[p.at[i]] = pr.K
	}
	n := 0
	for i, st := range p.steps {
		n += st.Seq.PagesNeeded(st.Seq.Len() + len(st.Tokens) + extra[i])
	}
	return n
}

// keep is the feature slot a sequence's steps fill for its drafter.
func keep(st *seqState) batch.Slot {
	if st.drafter == nil {
		return 0
	}
	return st.drafter.Keep()
}
