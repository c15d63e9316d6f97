// Package neural holds the speculative methods whose drafters are networks on the target's
// device: a draft model, Medusa heads, EAGLE and EAGLE-3 heads. Each registers its mode with
// spec, reads and checks its checkpoint before the target loads (spec.Open), and loads next
// to the target model (Load); each drafts for every drafting sequence of a step in one
// submit, reading the target's features from the sequences' feature slots (the target step's
// named outputs), never from the target's scratch buffers.
package neural

import (
	"fmt"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
)

// Checkpoint is a device method's checkpoint: it loads next to the target.
type Checkpoint interface {
	spec.Checkpoint
	// Load puts the drafter on the target's device; the target must have been made with
	// what Needs says (model.Options.AuxLayers, FeatureSlots).
	Load(target *model.Model) (spec.Method, error)
}

// Load returns the method of ck next to target: a device method loads; a model-free one's
// checkpoint is its method.
func Load(ck spec.Checkpoint, target *model.Model) (spec.Method, error) {
	switch c := ck.(type) {
	case Checkpoint:
		return c.Load(target)
	case spec.Method:
		return c, nil
	}
	return nil, fmt.Errorf("neural: a %T checkpoint neither loads nor is a method", ck)
}

// ModelOptions sets what a target model needs for a drafter of needs.
func ModelOptions(o *model.Options, needs spec.Needs) {
	o.AuxLayers = needs.AuxLayers
	if needs.Features {
		o.FeatureSlots = model.SlotPerSequence
	}
}
