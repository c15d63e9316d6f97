package sched

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/spec"
)

// A step's drafts and its outcome: the drafts asked of the method once the step is planned,
// then each job's part of the step's result taken (accepted tokens, stops, the end).

// propose asks the method for the drafts of every proposal at once and puts them after each
// job's token in its step (props[p] is steps[at[p]]'s, of job in[at[p]]). A failed call, or a
// proposal that breaks the contract, costs the drafts, not the requests. The call's time is
// shared among its proposals, for the metrics and the cost model.
func (s *Scheduler) propose(props []spec.Proposal, at []int, steps []batch.SeqStep, in []*job) {
	if len(props) == 0 {
		return
	}
	t0 := time.Now()
	err := s.method.Propose(props)
	share := time.Since(t0) / time.Duration(len(props))
	for p, pr := range props {
		i := at[p]
		in[i].res.Metrics.DraftTime += share
		if err != nil || checkDrafts(pr, s.lim) != nil {
			continue
		}
		if s.o.Cost != nil {
			s.o.Cost.ObserveDraft(len(pr.Drafts), share)
		}
		// Verified one-hot, q or not: a draft passes iff it is the target's own draw (a
		// sampling drafter draws with the target's key and noise, so the two are coupled), so
		// the output is the target's draws whatever was drafted, and a seeded request's text
		// does not depend on the drafter, the draft lengths or what else is batched.
		steps[i].Tokens = append(steps[i].Tokens, pr.Drafts...)
		steps[i].NDraft = len(pr.Drafts)
	}
}

// checkDrafts checks what a drafter proposed against its proposal and what the target's step
// takes; drafts that fail it are not verified (the step decodes one token).
func checkDrafts(p spec.Proposal, lim batch.Limits) error {
	vocab := lim.Vocab
	if len(p.Drafts) > p.K {
		return fmt.Errorf("%d drafts, %d asked for", len(p.Drafts), p.K)
	}
	for _, tok := range p.Drafts {
		if tok < 0 || tok >= vocab {
			return fmt.Errorf("draft token %d outside the vocabulary of %d", tok, vocab)
		}
	}
	if p.Q != nil && len(p.Drafts) > 0 && len(p.Q) != len(p.Drafts)*vocab {
		return fmt.Errorf("q has %d values for %d drafts of vocabulary %d", len(p.Q), len(p.Drafts), vocab)
	}
	return nil
}

// settle takes a job's part of a step: drops rejected drafts' KV, appends and emits the new
// tokens, and ends the job when it is done.
func (s *Scheduler) settle(j *job, st batch.SeqStep, out batch.StepOut, info *StepInfo) {
	seq := j.seq
	if !st.Sample { // a prompt chunk
		seq.fed += len(st.Tokens)
		return
	}
	if out.Err != nil {
		s.finish(j, "", out.Err)
		return
	}
	if st.Score { // a scored prompt chunk: its drafts were the prompt's next tokens
		if st.NDraft == 0 || len(out.Scores) != st.NDraft { // a chunk that scores nothing would never end
			s.finish(j, "", fmt.Errorf("sched: the target scored %d of %d prompt tokens", len(out.Scores), st.NDraft))
			return
		}
		j.res.PromptLogprobs = append(j.res.PromptLogprobs, out.Scores...)
		seq.fed += st.NDraft
		seq.seq.Truncate(seq.fed)
		if !j.scoring() && j.req.MaxNew == 0 {
			s.finish(j, spec.FinishLength, nil)
		}
		return
	}
	before := st.Seq.Len() - len(st.Tokens)
	accepted := len(out.Tokens) - 1
	if accepted < 0 || accepted > st.NDraft || !slices.Equal(out.Tokens[:accepted], st.Tokens[len(st.Tokens)-st.NDraft:][:accepted]) {
		s.finish(j, "", fmt.Errorf("sched: the target returned %v for drafts %v", out.Tokens, st.Tokens[1:]))
		return
	}
	if seq.decoding { // a verify step (a prompt's last chunk is not)
		seq.seq.Truncate(before + 1 + accepted)
		j.res.Metrics.Count(st.NDraft, accepted)
		seq.acc.Record(st.NDraft, accepted)
		s.acc.Record(st.NDraft, accepted)
		seq.probeOutcome(accepted)
		info.Drafts += st.NDraft
		info.Accepted += accepted
		for len(info.AcceptedAt) < st.NDraft {
			info.AcceptedAt = append(info.AcceptedAt, 0)
		}
		for i := 0; i < accepted; i++ {
			info.AcceptedAt[i]++
		}
	}
	j.ctx = append(j.ctx, out.Tokens...)
	seq.fed = len(j.ctx) - 1
	if seq.drafter != nil {
		if err := seq.drafter.Accept(j.ctx); err != nil {
			seq.drafter.Release()
			seq.drafter = nil // speculation ends for this job; decoding goes on
		}
	}
	j.adj.Generated(out.Tokens...)
	for i, tok := range out.Tokens {
		if slices.Contains(j.req.Stop, tok) && len(j.res.Tokens) >= j.req.MinNew {
			s.finish(j, spec.FinishStop, nil)
			return
		}
		if err := acceptGrammar(j, tok); err != nil {
			s.finish(j, "", err)
			return
		}
		if len(j.res.Tokens) == 0 {
			j.res.FirstToken = time.Since(j.submitted)
		}
		j.res.Tokens = append(j.res.Tokens, tok)
		if i < len(out.Logprobs) {
			j.res.Logprobs = append(j.res.Logprobs, out.Logprobs[i])
		}
		if j.req.Emit != nil && !j.req.Emit(tok) {
			s.finish(j, spec.FinishStop, nil)
			return
		}
		if len(j.res.Tokens) == j.req.MaxNew {
			s.finish(j, spec.FinishLength, nil)
			return
		}
	}
	if grammarDone(j) {
		s.finish(j, spec.FinishStop, nil)
		return
	}
	if len(j.ctx) >= s.lim.MaxSeq {
		s.finish(j, spec.FinishContextFull, nil)
	}
}

// holdStops bans the job's stop tokens from the step it is planned into while it has fewer
// than MinNew tokens (plan keeps such a step's rows all before that point).
func (j *job) holdStops() { j.adj.Ban(j.req.Stop, len(j.res.Tokens) < j.req.MinNew) }

// release frees a job's sequence and drafter; its context stays, to be recomputed.
func (s *Scheduler) release(j *job) {
	if j.seq == nil {
		return
	}
	if j.seq.drafter != nil {
		j.seq.drafter.Release()
	}
	j.seq.seq.Release()
	j.seq = nil
}

// preempt frees a running job's pages for the jobs before it; it waits to be recomputed,
// keeping its drafter when that lives on the host only.
func (s *Scheduler) preempt(j *job) {
	if d, ok := j.seq.drafter.(spec.HostDrafter); ok {
		j.kept, j.seq.drafter = d, nil
	}
	s.release(j)
	j.res.Preempted++
}

// finish ends a job: frees what it holds and sends its result (an error, or the reason).
func (s *Scheduler) finish(j *job, why spec.FinishReason, err error) {
	s.release(j)
	if j.kept != nil {
		j.kept.Release()
		j.kept = nil
	}
	j.res.Finish, j.res.Err = why, err
	if err != nil && errors.Is(err, ErrClosed) {
		j.res.Finish = spec.FinishCancelled
	}
	j.done <- j.res
}

// shutdown ends every job when the scheduler stops: running ones are cancelled with their
// tokens so far, queued ones get ErrClosed.
func (s *Scheduler) shutdown(waiting, running []*job) {
	for _, j := range running {
		s.finish(j, spec.FinishCancelled, nil)
	}
	for _, j := range append(waiting, s.take(true)...) {
		if j.started { // preempted: it has tokens
			s.finish(j, spec.FinishCancelled, nil)
		} else {
			s.finish(j, "", ErrClosed)
		}
	}
}
