package spec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

// ErrNeedsTarget is wrapped by the error of a drafter that reads the target model's state
// (EAGLE heads) made without one.
var ErrNeedsTarget = errors.New("the drafter reads the target model, and none was given")

func init() {
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		Register(kind, func(cfg Config, env Env) (Drafter, error) {
			dir := env.ModelDir
			if dir == "" {
				dir = cfg.Model
			}
			return LoadEagle(kind, dir, env.Target)
		})
	}
}

// Eagle drafts with an EAGLE-1 ("eagle") or EAGLE-3 ("eagle3") head (SafeAILab/EAGLE): one
// decoder layer on the device that reads the target's features of the accepted positions
// (EAGLE-1: the last hidden state after the final norm; EAGLE-3: the residual stream
// entering three layers, so the target must be made with ModelOptions.AuxLayers =
// EagleAuxLayers) and its own KV cache. Accept runs the head over the positions the target
// just verified (the catch-up); Propose drafts greedily, k depths in one submit, each fed
// the previous depth's token and output. Drafts are one-hot (q nil), so the rejection
// sampler keeps the output exactly the target's. Both must follow the target step that
// produced ctx's newest token, as in Decode.
type Eagle struct {
	name string
	head *model.Eagle
}

// LoadEagle loads the EAGLE head of kind ("eagle" or "eagle3") in folder dir next to target.
func LoadEagle(kind, dir string, target *model.Model) (*Eagle, error) {
	if dir == "" {
		return nil, fmt.Errorf("no %s checkpoint folder", kind)
	}
	if target == nil {
		return nil, fmt.Errorf("%w (%s heads read its hidden states)", ErrNeedsTarget, kind)
	}
	w, err := weights.LoadEagle(dir, kind)
	if err != nil {
		return nil, err
	}
	h, err := model.NewEagle(target, w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &Eagle{name: kind, head: h}, nil
}

// Name is "eagle" or "eagle3".
func (e *Eagle) Name() string { return e.name }

// Propose drafts up to k tokens greedily (no drafts before the head has seen the features
// of ctx's second newest position).
func (e *Eagle) Propose(ctx []int, k int) ([]int, []float32, error) {
	d, err := e.head.Draft(ctx, k)
	return d, nil, err
}

// Accept drops the head's speculative rows and catches up on the target's last step.
func (e *Eagle) Accept(ctx []int) error { return e.head.Sync(ctx) }

// Release frees the head's device buffers.
func (e *Eagle) Release() { e.head.Release() }

// EagleAuxLayers is the target layers whose input an eagle3 drafter of cfg reads, for a
// target of config target (nil for other methods): what model.Options.AuxLayers must
// be for the target model the drafter runs on.
func EagleAuxLayers(cfg *Config, target *weights.Config) ([]int, error) {
	if cfg == nil {
		return nil, nil
	}
	c := *cfg
	if err := c.Validate(); err != nil || c.Mode != weights.EagleKind3 {
		return nil, err
	}
	ec, err := weights.LoadEagleConfig(c.Model)
	if err != nil {
		return nil, fmt.Errorf("spec: eagle3 drafter: %w", err)
	}
	return ec.AuxLayers(target.NLayers)
}

// ensureAuxLayers remakes the target model when the drafter of spec reads residual snapshots
// (eagle3) that it was not made with (Load's Speculative option avoids this reload).
func (e *Engine) ensureAuxLayers(spec *Config) error {
	aux, err := EagleAuxLayers(spec, e.Config)
	if err != nil || aux == nil || slices.Equal(aux, e.Model.Opts.AuxLayers) {
		return err
	}
	host, err := weights.LoadLlama(e.Dir, nil)
	if err != nil {
		return err
	}
	opts := e.Model.Opts
	opts.AuxLayers = aux
	m, err := model.New(e.Device, host, opts)
	if err != nil {
		return err
	}
	e.Model.Release()
	e.Model = m
	return nil
}
