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
	probe   int  // steps without drafts before the next probe: probeEvery, doubling while probes are rejected
	probed  bool // this step's drafts are a probe
	// this step:
	decoding bool // it feeds its last token (and drafts), rather than a prompt chunk
}

// seedAcceptance is what the drafter's acceptance across sequences is worth to a new
// sequence, in drafts at the first position.
const seedAcceptance = 8

// probeEvery is how many steps without drafts a sequence waits before drafting one token
// anyway, so that its acceptance and the price of a draft row are still measured when the
// plan stops drafting. A rejected probe doubles the wait, up to probeMax, so that a drafter
// that is seldom right costs a fraction of a percent; an accepted one halves it, down to
// probeEvery, and drafting by plan resets it: a drafter right more often than not, whose plan
// stopped because steps looked dear (say on a busy spell of the machine), soon shows again
// what a draft costs.
const (
	probeEvery = 16
	probeMax   = 512
)

// probing says whether the sequence has gone long enough without drafts to probe one.
func (st *seqState) probing() bool { return st.idle >= max(st.probe, probeEvery) }

// planned takes the step's plan of k drafts for the sequence: drafting by plan resets the
// probe's wait; a probe's outcome sets it (probeOutcome).
func (st *seqState) planned(k int) {
	st.probed = k > 0 && st.probing() // a probe (or a plan that drafts again just then)
	if k > 0 && !st.probed {
		st.probe = probeEvery
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
		st.probe = max(st.probe/2, probeEvery)
	} else {
		st.probe = min(2*max(st.probe, probeEvery), probeMax)
	}
}
