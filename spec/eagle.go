package spec

import (
	"fmt"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

func init() {
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		Register(kind, func(cfg Config, target *weights.Config) (Checkpoint, error) {
			return openEagle(kind, cfg.Model, target)
		})
	}
}

// eagleCheckpoint is an EAGLE or EAGLE-3 head read from its folder and checked against the
// target's configuration; aux is the target layers it reads (EAGLE-3).
type eagleCheckpoint struct {
	dir string
	w   *weights.Eagle
	aux []int
}

func openEagle(kind, dir string, target *weights.Config) (*eagleCheckpoint, error) {
	if dir == "" {
		return nil, fmt.Errorf("no %s checkpoint folder", kind)
	}
	w, err := weights.LoadEagle(dir, kind)
	if err != nil {
		return nil, err
	}
	if err := w.CheckTarget(target); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	c := &eagleCheckpoint{dir: dir, w: w}
	if kind == weights.EagleKind3 {
		if c.aux, err = w.AuxLayers(target.NLayers); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return c, nil
}

func (c *eagleCheckpoint) AuxLayers() []int { return c.aux }

// Load uploads the head next to target, which must have been made with AuxLayers().
func (c *eagleCheckpoint) Load(target *model.Model) (Method, error) {
	h, err := model.NewEagle(target, c.w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.dir, err)
	}
	return &EagleMethod{head: h}, nil
}

// EagleMethod is an EAGLE-1 ("eagle") or EAGLE-3 ("eagle3") head (SafeAILab/EAGLE) on the
// target's device: one decoder layer that reads the target's features of the accepted
// positions (EAGLE-1: the last hidden state after the final norm; EAGLE-3: the residual
// stream entering three layers) and keeps a KV cache per sequence.
type EagleMethod struct {
	head *model.Eagle
}

// Name is "eagle" or "eagle3".
func (m *EagleMethod) Name() string { return m.head.Kind() }

// NewDrafter starts drafting for the target session t with an empty head cache.
func (m *EagleMethod) NewDrafter(t Target) (Drafter, error) {
	sess, ok := t.(*model.Session)
	if !ok {
		return nil, fmt.Errorf("%w: an EAGLE head drafts for a session of its target model", ErrNeedsTarget)
	}
	seq, err := m.head.NewSeq(sess)
	if err != nil {
		return nil, err
	}
	return &Eagle{name: m.head.Kind(), seq: seq}, nil
}

// Release frees the head's device buffers.
func (m *EagleMethod) Release() { m.head.Release() }

// Eagle drafts for one sequence with an EAGLE head. Propose first runs the head over the
// positions the target's last step verified (the catch-up), then drafts greedily, k depths in
// one submit, each fed the previous depth's token and output. Drafts are one-hot (q nil), so
// the rejection sampler keeps the output exactly the target's. Propose must follow the target
// step that produced ctx's newest token, as in Decode. The catch-up waits for Propose so that
// a step that drafts nothing costs nothing: after such steps the head restarts its cache at
// the features of the target's last step (see model.EagleSeq.Sync).
type Eagle struct {
	name string
	seq  *model.EagleSeq
}

// Name is "eagle" or "eagle3".
func (e *Eagle) Name() string { return e.name }

// Propose drafts up to k tokens greedily (no drafts before the head has seen the features
// of ctx's second newest position).
func (e *Eagle) Propose(ctx []int, k int) ([]int, []float32, error) {
	d, err := e.seq.Draft(ctx, k)
	return d, nil, err
}

// Accept does nothing: the next Propose drops the head's speculative rows and catches up.
func (e *Eagle) Accept(ctx []int) error { return nil }

// Release frees the sequence's head cache pages.
func (e *Eagle) Release() { e.seq.Release() }
