package spec

// The adaptive planner's constants, all of them: the cost model (adapt.go, heights.go), the
// acceptance estimates (acceptance.go) and the scheduler's probes (spec/sched). Every rule they
// set is priced by TestPlannerSimulation (spec/sched/planner_sim_test.go): over drafters right
// 10-100% of the time, on devices where a verified row costs 0.05-1 decode step, with noisy
// and busy steps, the plan stays within 5% of the best fixed draft length and 3% of plain
// decoding. docs/speculative.md ("The planner") tells how each was found.
const (
	// Memory is how many recent observations the cost model's means weigh: a step's time and
	// a drafter call's fade by 1 - 1/Memory with each later one (draft outcomes have their
	// own, acceptanceMemory).
	Memory = 20
	// SeedDrafts is what the engine's acceptance across sequences is worth to a new sequence,
	// in drafts at the first position.
	SeedDrafts = 8
	// ProbeMaxWait is the most steps a sequence whose probes keep being rejected waits before
	// the next (a sequence without drafts probes one every Memory steps at first).
	ProbeMaxWait = 512

	// acceptanceMemory is how many recent drafts at a position its rate weighs most.
	acceptanceMemory = 50
	// acceptancePrior is what a draft position's prior rate is worth, in drafts.
	acceptancePrior = 2
	// minFitWeight is the weight below which a row count's mean time leaves the fit (about 27
	// steps of other row counts since it was last stepped).
	minFitWeight = 0.25
	// trustBlock is the weight a height's (or a multi-block step's) mean needs to price it
	// alone: stepped about once in every 14 steps lately.
	trustBlock = 2
	// slowStep is how many times slower than its row count's mean a step must be to be taken
	// for a busy machine's and left out (at most Memory in a row).
	slowStep = 1.5
)

// Derived from the ones above.
const (
	emaDecay        = 1 - 1.0/Memory               // a step time's or a drafter call's fading
	acceptanceDecay = 1 - 1.0/acceptanceMemory     // a draft outcome's fading
	hopeDrafts      = SeedDrafts + acceptancePrior // drafts a first position's rate is a guess on
)
