package model

import (
	"encoding/binary"
	"math"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/webgpu"
)

// Drafting heads (EAGLE, EAGLE-3, Medusa) end in argmax_rows with GUMBEL: for a sequence
// sampled at a temperature they draw their drafts from softmax(logits / T) on the device and
// copy those logits out, and the host returns that distribution as the drafts' q.
//
// A draft is drawn with the target sampler's own key and noise at the draft's position (the
// sequence's Seed and Choice, the token's position and id), so it is coupled to the target's
// draw there: where the two distributions agree the draft is the target's draw, and the
// verifier, which accepts a draft iff it is the target's draw, takes it. The output is the
// target's draws whatever was drafted: a seeded request gives one text with or without
// speculation (spec/sched).

// drawParamBytes is one program's argmax_rows draw params: 1/T, the key's two words, the
// position, the sequence's choice, three unused words.
const drawParamBytes = 32

// drawParams is a program's draw params: the plain argmax when invT is 0, else a draw at
// 1/T = invT with the target's key for s at the drafted token's position pos.
func drawParams(invT float32, s batch.Sampling, pos int) []byte {
	return runtime.U32Bytes([]uint32{math.Float32bits(invT), uint32(s.Seed), uint32(s.Seed >> 32), uint32(pos), s.Choice, 0, 0, 0})
}

// distribution writes into q (the target's vocabulary) softmax(logits / T) of a head's
// logits row (little-endian f32, its own vocabulary), the distribution argmax_rows sampled
// the draft from; with d2t (EAGLE-3), draft id i goes to target id i + d2t[i], the rest stay 0.
func distribution(row []byte, invT float32, d2t []int64, q []float32) {
	n := len(row) / 4
	z := make([]float64, n)
	mx := math.Inf(-1)
	for i := range n {
		z[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * invT)
		mx = max(mx, z[i])
	}
	sum := 0.0
	for i := range z {
		z[i] = math.Exp(z[i] - mx)
		sum += z[i]
	}
	for i, v := range z {
		id := i
		if d2t != nil {
			id += int(d2t[i])
		}
		q[id] = float32(v / sum)
	}
}

// logitsStage is the map-read buffer a sampled draft's logits row is copied to in its draft's
// submit, one slot each, so that the host can return the draft's q. It is made at the first
// sampled draft.
type logitsStage struct {
	buf *webgpu.Buffer
	row uint64 // bytes of one row
}

// ensure makes the buffer, once: slots rows of cols floats.
func (s *logitsStage) ensure(d *runtime.Device, label string, cols, slots int) error {
	s.row = uint64(4 * cols)
	if s.buf != nil {
		return nil
	}
	var err error
	s.buf, err = d.CreateBuffer(label, s.row*uint64(slots), webgpu.UsageMapRead|webgpu.UsageCopyDst)
	return err
}

// keep records the copy of the logits row at srcOff of src into slot.
func (s *logitsStage) keep(enc *webgpu.Encoder, src *webgpu.Buffer, srcOff uint64, slot int) {
	enc.Copy(src, srcOff, s.buf, uint64(slot)*s.row, s.row)
}

// read reads slots 0..slots-1 back, after the submit.
func (s *logitsStage) read(slots int) ([]byte, error) {
	raw := make([]byte, uint64(slots)*s.row)
	return raw, s.buf.Read(0, raw)
}

// q is the distributions of the n drafts kept in slots slot0.., [n, vocab] (distribution).
func (s *logitsStage) q(raw []byte, slot0, n int, invT float32, d2t []int64, vocab int) []float32 {
	q := make([]float32, n*vocab)
	for j := range n {
		distribution(raw[uint64(slot0+j)*s.row:][:s.row], invT, d2t, q[j*vocab:(j+1)*vocab])
	}
	return q
}

func (s *logitsStage) release() {
	if s.buf != nil {
		s.buf.Release()
		s.buf = nil
	}
}
