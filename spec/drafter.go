package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

// A speculative method goes through three stages, so that a bad drafter checkpoint is
// reported before the target model is read, its weights are on the device once, and every
// sequence drafts with state of its own:
//
//	err := cfg.Validate()                     // where the config enters (fills defaults)
//	ck, err := spec.Open(cfg, targetConfig)   // read and check the checkpoint (host memory)
//	target := model.New(..., AuxLayers: ck.AuxLayers())
//	m, err := ck.Load(target)                 // the drafter's weights on the target's device
//	d, err := m.NewDrafter(session)           // one sequence's drafter
//	... Decode(ctx, session, d, ...); d.Release()
//	m.Release()

// Drafter proposes the tokens the target model verifies, for one sequence.
type Drafter interface {
	// Name is the mode the drafter was registered under ("ngram", ...).
	Name() string
	// Propose drafts at most k tokens to follow ctx, the whole sequence so far (prompt and
	// output; the drafter must not modify it). q is [len(drafts), vocab]: row j is the
	// (processed) distribution drafts[j] was sampled from; nil means one-hot on the drafts
	// (argmax or lookup drafters). Zero drafts is fine: the step then decodes one token.
	Propose(ctx []int, k int) (drafts []int, q []float32, err error)
	// Accept tells the drafter the sequence is now ctx (final: the accepted drafts and the
	// target's token), so it can roll back whatever state it kept past the accepted prefix.
	// It is also called once after the prompt's prefill.
	Accept(ctx []int) error
	// Release frees what the drafter holds for its sequence (KV pages, a session). The
	// drafter is unusable afterwards; releasing twice is harmless.
	Release()
}

// Method is a speculative method loaded next to a target model: what every sequence's
// drafter shares (weights on the device, recorded programs).
type Method interface {
	// Name is the mode ("ngram", "eagle3", ...).
	Name() string
	// NewDrafter starts the drafter of one new sequence, whose target is t (the drafter heads
	// read its rows of the target's steps: t must then be a *model.Session).
	NewDrafter(t Target) (Drafter, error)
	// Release frees the method's device memory. Its drafters must be released first.
	Release()
}

// Checkpoint is a drafter's checkpoint read into host memory and checked against the
// target's configuration, before the target is on the device.
type Checkpoint interface {
	// AuxLayers are the target layers whose input the drafter reads (EAGLE-3's residual
	// snapshots): what model.Options.AuxLayers must be for the target. nil for none.
	AuxLayers() []int
	// Load puts the drafter on the target's device.
	Load(target *model.Model) (Method, error)
}

// ErrNeedsTarget is wrapped by Open's error when no target configuration is given.
var ErrNeedsTarget = errors.New("no target model given")

// Opener reads the checkpoint of a (validated) config for a target of configuration target
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
// configuration. cfg must be validated (Config.Validate fills its defaults).
func Open(cfg Config, target *weights.Config) (Checkpoint, error) {
	open := opener(cfg.Mode)
	switch {
	case open == nil:
		return nil, fmt.Errorf("spec: unknown method %q (validate the config first)", cfg.Mode)
	case target == nil:
		return nil, fmt.Errorf("spec: %s drafter: %w", cfg.Mode, ErrNeedsTarget)
	}
	ck, err := open(cfg, target)
	if err != nil {
		return nil, fmt.Errorf("spec: %s drafter: %w", cfg.Mode, err)
	}
	return ck, nil
}

// stateless is the Checkpoint and Method of a drafter that needs nothing of the device.
type stateless struct {
	name string
	make func() Drafter
}

func (s stateless) AuxLayers() []int                   { return nil }
func (s stateless) Load(*model.Model) (Method, error)  { return s, nil }
func (s stateless) Name() string                       { return s.name }
func (s stateless) NewDrafter(Target) (Drafter, error) { return s.make(), nil }
func (s stateless) Release()                           {}
