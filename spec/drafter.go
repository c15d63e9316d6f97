package spec

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
)

// Drafter proposes the tokens the target model verifies. One Drafter serves one sequence;
// each kind lives in its own file and registers a Factory under its mode name.
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
}

// Env is what drafters may need from the engine. Any field may be zero or nil when the
// engine does not have it; a drafter that needs a missing one returns an error.
type Env struct {
	Vocab    int             // the target's vocabulary size: drafts must be below it
	MaxSeq   int             // the target's context length
	ModelDir string          // local folder of Config.Model (draft_model, medusa, eagle, eagle3)
	Device   *runtime.Device // the target's device, for drafters that run a model there
	Target   *model.Model    // the target model (heads such as EAGLE's and Medusa's read it)
}

// Factory makes a drafter from its (validated) config.
type Factory func(cfg Config, env Env) (Drafter, error)

var registry = struct {
	sync.Mutex
	m map[string]Factory
}{m: map[string]Factory{}}

// Register makes a drafter available under name (usually from an init function). It panics
// on an empty or duplicate name or a nil factory, as those are programming errors.
func Register(name string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" || f == nil {
		panic("spec.Register: empty name or nil factory")
	}
	if _, dup := registry.m[name]; dup {
		panic("spec.Register: drafter " + name + " registered twice")
	}
	registry.m[name] = f
}

// Names lists the registered drafters, sorted.
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

// NewDrafter makes the drafter cfg.Mode names (cfg validated, as Validate leaves it).
func NewDrafter(cfg Config, env Env) (Drafter, error) { return New(cfg.Mode, cfg, env) }

// New makes the drafter registered under name for cfg (name is usually cfg.Mode).
func New(name string, cfg Config, env Env) (Drafter, error) {
	registry.Lock()
	f := registry.m[name]
	registry.Unlock()
	if f == nil {
		return nil, fmt.Errorf("spec: no drafter named %q (available: %s)", name, strings.Join(Names(), ", "))
	}
	d, err := f(cfg, env)
	if err != nil {
		return nil, fmt.Errorf("spec: %s drafter: %w", name, err)
	}
	return d, nil
}
