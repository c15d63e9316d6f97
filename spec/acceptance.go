package spec

import "math"

// Acceptance is what a sequence's drafts have been worth: per draft position, decayed counts
// of the drafts proposed there and accepted (a draft is only tried when those before it were
// accepted, so accepted/proposed at j is the chance of j given j-1).
type Acceptance struct {
	proposed, accepted [MaxSpeculativeTokens]float64
}

// acceptanceDecay weighs past steps: about the last 50 count.
const acceptanceDecay = 0.98

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

// acceptancePrior is what a position's prior is worth, in drafts.
const acceptancePrior = 2

// Rate is the estimated chance that draft j (0-based) is accepted given the ones before it
// were. Each position's counts start from a prior worth acceptancePrior drafts: one half for
// the first, the position before's rate for the others. A position the plan has not tried
// yet so takes the rate of the ones it did: a prior of one half for every position would make
// the chance of a long run look small until it was tried, and a plan that never tries it
// would never learn otherwise (a drafter that is always right stayed at 2-3 drafts a step).
func (a *Acceptance) Rate(j int) float64 {
	r := 0.5
	for i := 0; i <= j; i++ {
		r = (a.accepted[i] + acceptancePrior*r) / (a.proposed[i] + acceptancePrior)
	}
	return r
}

// Seed starts a with what from has learnt, each position's counts scaled to be worth at most
// weight drafts: a new sequence of an engine whose drafter has been measured starts from
// that, not from nothing, and its own steps soon outweigh it. Each position apart: the deeper
// positions are drafted less often, and scaled as the first one is their evidence shrank to
// less than the prior's, which then made a deep draft look about as likely as the one before
// it (Medusa's second head, right 11% of the time, looked 30-60% likely to a new sequence that
// had two lucky first drafts, and drafted now and then: 1.05x against 1.14x at k 1 on the
// inflated model).
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
// A rate learnt from a few drafts is a guess, and a plan that believes a low guess stops
// drafting and so stops learning: EAGLE-3, right 74% of the time, had its first draft of a
// fresh engine rejected (rate 0.33 from one draft and the prior) and drafted nothing for 16
// steps, then a rejected probe doubled the wait. A rate learnt from many drafts is no guess:
// raised by a full standard error (0.06 over 50 drafts at 30%), n-gram, right 30% of the time
// where a draft paid from 34% on the inflated model, drafted nearly every step (0.96x, k 1
// 0.95x). Only the first position: raising every position's rate made weak drafters draft a
// second and third token now and then (n-gram 0.87x against 1.14x at k 1 on the inflated
// model), and a deeper position's rate only lengthens runs the plan already makes.
func (a *Acceptance) Hopeful(j int) float64 { return a.chain(j, true) }

// hopeDrafts is how many drafts (prior included) a first position's rate rests on while the
// plan raises it by a full standard error: a new sequence's seed (8) and prior (2) are still a
// guess. Simulated over requests of 48 tokens seeded from the engine (a draft paying from 32%),
// the plan's worst shortfall against the better of no drafts and one a step, over drafters right
// 20-50% of the time, was 1.9% with 10 against 2.3% with 4 and 2.7% with no limit (too few
// drafts above the break-even with 4, too many below it without a limit).
const hopeDrafts = 10

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
