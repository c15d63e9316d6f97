package sched

import (
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/spec"
)

// seqState is a running job's sequence: its KV pages, its drafter and how far its context is
// in the cache.
type seqState struct {
	seq     *kv.Sequence
	drafter spec.Drafter // nil without speculation
	fed     int          // tokens of the job's context in the cache
	acc     spec.Acceptance
	idle    int  // steps since it last drafted (a draft is probed now and then)
	probe   int  // steps without drafts before the next probe: spec.Memory, doubling while probes are rejected
	probed  bool // this step's drafts are a probe
	// this step:
	decoding bool // it feeds its last token (and drafts), rather than a prompt chunk
}

// A sequence the plan leaves without drafts for spec.Memory steps drafts one token anyway (a
// probe), so that its acceptance and the price of a draft row are still measured: the cost
// model's means of a row count fade over about as many steps. A rejected probe doubles the
// wait, up to spec.ProbeMaxWait, so that a drafter that is seldom right costs a fraction of a
// percent; an accepted one halves it, and drafting by plan resets it.

// probing says whether the sequence has gone long enough without drafts to probe one.
func (st *seqState) probing() bool { return st.idle >= max(st.probe, spec.Memory) }

// planned takes the step's plan of k drafts for the sequence: drafting by plan resets the
// probe's wait; a probe's outcome sets it (probeOutcome).
func (st *seqState) planned(k int) {
	st.probed = k > 0 && st.probing() // a probe (or a plan that drafts again just then)
	if k > 0 && !st.probed {
		st.probe = spec.Memory
	}
}

// probeOutcome takes how many of a probe's drafts were accepted: none doubles the wait for
// the next probe, any halves it.
func (st *seqState) probeOutcome(accepted int) {
	if !st.probed {
		return
	}
	st.probed = false
	if accepted > 0 {
		st.probe = max(st.probe/2, spec.Memory)
	} else {
		st.probe = min(2*max(st.probe, spec.Memory), spec.ProbeMaxWait)
	}
}
