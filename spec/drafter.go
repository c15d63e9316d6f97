// Package spec is speculative decoding's contract and its model-free parts: the drafter
// interfaces and the registry of methods (the one list of modes), their configuration, the
// n-gram drafter, the metrics, and the planner that sizes each step's drafts to what pays.
// The loop is the scheduler's (spec/sched): each step it asks the method for drafts for every
// sequence that drafts, verifies them all in one target step whose rejection sampler keeps
// the output distribution exactly the target's, and tells each drafter what was accepted.
// Drafters that run on the device (draft model, Medusa, EAGLE, EAGLE-3) are in spec/neural.
// This package is pure Go: the scheduler and its tests need no device.
package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/weights"
)

// A speculative method goes through three stages, so that a bad drafter checkpoint is
// reported before the target model is read, its weights go on the device once, and every
// sequence drafts with state of its own:
//
//	err := cfg.Validate()                     // where the config enters (fills defaults)
//	ck, err := spec.Open(cfg, targetConfig)   // read and check the checkpoint (host memory)
//	target := model.New(..., ck.Needs())      // the target, with what the drafter reads
//	m, err := neural.Load(ck, target)         // the drafter's weights on the target's device
//	d, err := m.NewDrafter()                  // one sequence's drafter
//	... m.Propose([]Proposal{{Drafter: d, ...}, ...}); d.Accept(ctx); ...; d.Release()
//	m.Release()

// Drafter is one sequence's drafting state (an EAGLE head's KV pages, a draft model's
// sequence), made by its Method and handed back to it in each Proposal.
type Drafter interface {
	// Keep is the feature slot the target's steps of the sequence fill for the drafter
	// (batch.SeqStep.Keep): the target's features it drafts from. 0: it reads none.
	Keep() batch.Slot
	// Accept tells the drafter the sequence is now ctx (final: the accepted drafts and the
	// target's token), so it can roll back whatever state it kept past the accepted prefix.
	// It is also called once after the prompt's prefill.
	Accept(ctx []int) error
	// Release frees what the drafter holds for its sequence (KV pages, a slot). The drafter
	// is unusable afterwards; releasing twice is harmless.
	Release()
}

// HostDrafter is a Drafter whose state lives on the host only (no KV pages, no slot), so it
// stays valid when its sequence is preempted: the scheduler hands it to the recomputation
// (whose first Accept then adds only the new token) instead of releasing it and starting
// another that would take the tokens generated so far for prompt.
type HostDrafter interface {
	Drafter
	HostOnly()
}

// Proposal is one sequence's part of a Method.Propose call.
type Proposal struct {
	Drafter Drafter
	Ctx     []int // the whole sequence so far, prompt and output (read only)
	K       int   // drafts at most (>= 1)
	// Sampling is how the target samples the sequence. A sampling drafter draws draft j with
	// the target's key and Gumbel noise at the draft's position (Seed, Choice, len(Ctx)+j, the
	// token id): the scheduler accepts a draft iff it is the target's own draw there, so the
	// closer the drafter's distribution to the target's, the likelier the two draws agree.
	Sampling batch.Sampling
	// Set by Propose: at most K drafts to follow Ctx (none is fine: the step then decodes one
	// token), and Q, [len(Drafts), vocab], row j the distribution draft j was drawn from (nil:
	// argmax or lookup drafts). The scheduler verifies every draft one-hot and reads no Q; it
	// is there for the drafters' tests and measurements.
	Drafts []int
	Q      []float32
}

// Method is a speculative method loaded next to a target model: what its sequences' drafters
// share (weights on the device, recorded programs).
type Method interface {
	// Name is the mode ("ngram", "eagle3", ...).
	Name() string
	// NewDrafter starts the drafter of one new sequence.
	NewDrafter() (Drafter, error)
	// Propose drafts for every proposal, each made by this method's NewDrafter. A method on
	// the device drafts for all of them in one submit. Its error costs the step its drafts,
	// not the requests.
	Propose(ps []Proposal) error
	// Release frees the method's device memory. Its drafters must be released first.
	Release()
}

// Needs are what a drafter needs of its target model, known from its checkpoint before the
// target is on the device.
type Needs struct {
	AuxLayers []int // the target layers whose entering residual stream it reads (EAGLE-3)
	Features  bool  // it reads the target's feature slots (EAGLE, EAGLE-3, Medusa)
	// KVWidth is the values a token takes in the drafter's widest KV cache binding (one
	// layer's K or V; 0: it has no cache), in float32 when KVF32 (else in the target's KV
	// type). Its cache mirrors the target's pages, so the memory plan bounds those for it
	// to fit one storage binding too.
	KVWidth int
	KVF32   bool
}

// Checkpoint is a drafter's checkpoint read into host memory and checked against the
// target's configuration, before the target is on the device. A model-free method's
// Checkpoint is its Method; a device method's loads next to the target (spec/neural).
type Checkpoint interface {
	Needs() Needs
}

// ErrNeedsTarget is wrapped by Open's error when no target configuration is given.
var ErrNeedsTarget = errors.New("no target model given")

// Opener reads the checkpoint of a validated config for a target of configuration target
// (never nil).
type Opener func(cfg Config, target *weights.Config) (Checkpoint, error)

// The registry is the one list of modes: Config.Validate accepts exactly the names here.
var registry = struct {
	sync.Mutex
	m map[string]Opener
}{m: map[string]Opener{}}

// Register makes a method available under name (from an init function). It panics on an
// empty or duplicate name or a nil opener, as those are programming errors.
func Register(name string, open Opener) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" || name != strings.ToLower(name) || open == nil {
		panic("spec.Register: empty or upper-case name, or nil opener")
	}
	if _, dup := registry.m[name]; dup {
		panic("spec.Register: method " + name + " registered twice")
	}
	registry.m[name] = open
}

// Names lists the registered methods, sorted.
func Names() []string {
	registry.Lock()
	defer registry.Unlock()
	var names []string
	for n := range registry.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func opener(name string) Opener {
	registry.Lock()
	defer registry.Unlock()
	return registry.m[name]
}

// Open reads the checkpoint of the method cfg names, checked against the target's
// configuration. cfg must have passed Config.Validate (which fills its defaults); Open does
// not check it again.
func Open(cfg Config, target *weights.Config) (Checkpoint, error) {
	open := opener(cfg.Mode)
	switch {
	case open == nil:
		return nil, fmt.Errorf("spec: method %q is not registered (the config was not validated)", cfg.Mode)
	case target == nil:
		return nil, fmt.Errorf("spec: %s drafter: %w", cfg.Mode, ErrNeedsTarget)
	}
	ck, err := open(cfg, target)
	if err != nil {
		return nil, fmt.Errorf("spec: %s drafter: %w", cfg.Mode, err)
	}
	return ck, nil
}
