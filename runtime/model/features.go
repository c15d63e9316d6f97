package model

import (
	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
)

// What drafters read of the target, on the device, right after a target step (the next step
// overwrites them). Rows are the step's tokens: a sequence's n rows from row0 are its tokens
// at positions pos0 .. pos0 + n (Session.LastRows).

// Device is the model's device.
func (m *Model) Device() *runtime.Device { return m.d }

// LastRows returns where the model's last step put the session's tokens: its rows row0 ..
// row0 + n of the activations hold positions pos0 .. pos0 + n (n is 0 when the session was
// not in that step).
func (s *Session) LastRows() (row0, pos0, n int) {
	r := s.m.last[s.seq]
	return r.row0, r.pos0, r.n
}

// Hidden is the residual stream after the last layer, before the final norm: [chunk, dim].
func (m *Model) Hidden() *webgpu.Buffer { return m.x }

// Aux holds the residual stream entering each of Opts.AuxLayers: [chunk, len(AuxLayers) * dim].
func (m *Model) Aux() *webgpu.Buffer { return m.aux }

// FinalNorm is the final RMSNorm weight [dim] (f32).
func (m *Model) FinalNorm() *webgpu.Buffer { return m.norm }

// Embedding is the token embedding [vocab, dim].
func (m *Model) Embedding() *runtime.Linear { return m.embed }

// LMHead is the output projection [vocab, dim] (the embedding when tied).
func (m *Model) LMHead() *runtime.Linear { return m.lmHead }

// Dummy is a small buffer for bindings a kernel variant does not read.
func (m *Model) Dummy() *webgpu.Buffer { return m.dummy }
