package spec

import "math"

// Acceptance is what a sequence's drafts have been worth: per draft position, decayed counts
// of the drafts proposed there and accepted (a draft is only tried when those before it were
// accepted, so accepted/proposed at j is the chance of j given j-1).
type Acceptance struct {
	proposed, accepted [MaxSpeculativeTokens]float64
}

// Record counts a step that proposed nDraft drafts of which the first accepted were kept.
func (a *Acceptance) Record(nDraft, accepted int) {
	for j := 0; j < nDraft && j < MaxSpeculativeTokens; j++ {
		a.proposed[j] *= acceptanceDecay
		a.accepted[j] *= acceptanceDecay
		if j <= accepted { // reached: the drafts before it were accepted
			a.proposed[j]++
			if j < accepted {
				a.accepted[j]++
			}
		}
	}
}

// Rate is the estimated chance that draft j (0-based) is accepted given the ones before it
// were. Each position's counts start from a prior worth acceptancePrior drafts: one half for
// the first, the position before's rate for the others, so that a position not tried yet
// takes the rate of the ones tried (with one half for every position, a plan would never try
// the long runs of a drafter that is always right).
func (a *Acceptance) Rate(j int) float64 {
	r := 0.5
	for i := 0; i <= j; i++ {
		r = (a.accepted[i] + acceptancePrior*r) / (a.proposed[i] + acceptancePrior)
	}
	return r
}

// Seed starts a with what from has learnt, each position's counts scaled to be worth at most
// weight drafts: a new sequence of an engine whose drafter has been measured starts from
// that, and its own steps soon outweigh it. Each position is scaled apart, so that a deeper
// position, drafted less often, keeps its evidence rather than shrinking below its prior's.
func (a *Acceptance) Seed(from *Acceptance, weight float64) {
	*a = Acceptance{}
	for j := range a.proposed {
		if from.proposed[j] <= 0 {
			continue
		}
		f := min(1, weight/from.proposed[j])
		a.proposed[j], a.accepted[j] = from.proposed[j]*f, from.accepted[j]*f
	}
}

// Chain is the chance that drafts 0..j are all accepted.
func (a *Acceptance) Chain(j int) float64 { return a.chain(j, false) }

// Hopeful is Chain with the first position's rate, once tried, raised by what the plan allows
// a guess: one standard error of its estimate, sqrt(r (1 - r) / n) over the n drafts (prior
// included) it rests on, in full while n is at most hopeDrafts and shrinking as 1/n past it.
// A plan that believes a low guess from a few drafts stops drafting, and so stops learning;
// one that raises a rate learnt from many drafts keeps drafting where it does not pay. Only
// the first position is raised: it decides whether to draft at all, and a deeper position's
// rate only lengthens runs the plan already makes.
func (a *Acceptance) Hopeful(j int) float64 { return a.chain(j, true) }

func (a *Acceptance) chain(j int, hopeful bool) float64 {
	p, r := 1.0, 0.5
	for i := 0; i <= j; i++ {
		n := a.proposed[i] + acceptancePrior
		r = (a.accepted[i] + acceptancePrior*r) / n
		if hopeful && i == 0 && a.proposed[0] > 0 { // the first position decides to draft at all
			p *= min(1, r+math.Sqrt(r*(1-r)/n)*min(1, hopeDrafts/n))
		} else {
			p *= r
		}
	}
	return p
}
