package webgpu

import (
	"fmt"
	"syscall/js"
)

// Buffer is a GPUBuffer.
type Buffer struct {
	d     *Device
	v     js.Value
	Size  uint64
	Usage BufferUsage
	Label string
}

// CreateBuffer makes a buffer; size is rounded up to a multiple of 4.
func (d *Device) CreateBuffer(label string, size uint64, usage BufferUsage) (*Buffer, error) {
	size, err := bufferSize(label, size, d.Limits.MaxBufferSize)
	if err != nil {
		return nil, err
	}
	var v js.Value
	desc := object(map[string]any{"label": label, "size": size, "usage": uint32(usage)})
	d.v.Call("pushErrorScope", "out-of-memory")
	err = d.scoped("createBuffer "+label, func() { v = d.v.Call("createBuffer", desc) })
	if oom, err2 := await(d.v.Call("popErrorScope"), "createBuffer "+label); err == nil && err2 != nil {
		err = err2
	} else if err == nil && !oom.IsNull() && !oom.IsUndefined() {
		err = fmt.Errorf("%w: createBuffer %s (%d bytes): out of memory: %s", ErrValidation, label, size, jsErrorString(oom))
	}
	if err != nil {
		if !v.IsUndefined() {
			v.Call("destroy")
		}
		return nil, err
	}
	return &Buffer{d: d, v: v, Size: size, Usage: usage, Label: label}, nil
}

// Write copies data into the buffer at offset through the queue (offset and length multiples of 4).
func (b *Buffer) Write(offset uint64, data []byte) {
	if len(data) == 0 {
		return
	}
	if offset+uint64(len(data)) > b.Size || offset%4 != 0 || len(data)%4 != 0 {
		panic(fmt.Sprintf("webgpu: write of %d bytes at %d into %q of %d bytes", len(data), offset, b.Label, b.Size))
	}
	u := js.Global().Get("Uint8Array").New(len(data))
	js.CopyBytesToJS(u, data)
	b.d.queue.Call("writeBuffer", b.v, float64(offset), u)
}

// Read maps a MapRead buffer and copies len(dst) bytes at offset into dst.
func (b *Buffer) Read(offset uint64, dst []byte) error {
	n := len(dst)
	const mapRead = 1 // GPUMapMode.READ
	if _, err := await(b.v.Call("mapAsync", mapRead, float64(offset), n), "mapAsync "+b.Label); err != nil {
		return err
	}
	r := b.v.Call("getMappedRange", float64(offset), n)
	js.CopyBytesToGo(dst, js.Global().Get("Uint8Array").New(r))
	b.v.Call("unmap")
	return b.d.Check()
}

// Release destroys the buffer.
func (b *Buffer) Release() {
	if b != nil && !b.v.IsUndefined() {
		b.v.Call("destroy")
		b.v = js.Undefined()
	}
}

// Encoder records copies and compute passes into one command buffer for one submit.
type Encoder struct {
	d *Device
	v js.Value
}

// NewEncoder starts a command encoder.
func (d *Device) NewEncoder() *Encoder {
	return &Encoder{d: d, v: d.v.Call("createCommandEncoder")}
}

// Pass is an open compute pass.
type Pass struct {
	v js.Value
}

// BeginPass opens a compute pass. With a query set, the pass writes timestamps at its
// beginning and end into slots begin and begin+1.
func (e *Encoder) BeginPass(qs *QuerySet, begin uint32) *Pass {
	if qs == nil {
		return &Pass{v: e.v.Call("beginComputePass")}
	}
	desc := object(map[string]any{"timestampWrites": map[string]any{"querySet": qs.v,
		"beginningOfPassWriteIndex": begin, "endOfPassWriteIndex": begin + 1}})
	return &Pass{v: e.v.Call("beginComputePass", desc)}
}

// Dispatch runs p with bind group g over x*y*z workgroups.
func (ps *Pass) Dispatch(p *ComputePipeline, g *BindGroup, x, y, z uint32) {
	ps.v.Call("setPipeline", p.v)
	ps.v.Call("setBindGroup", 0, g.v)
	ps.v.Call("dispatchWorkgroups", x, y, z)
}

// End closes the pass.
func (ps *Pass) End() { ps.v.Call("end") }

// Copy copies n bytes between buffers.
func (e *Encoder) Copy(src *Buffer, srcOff uint64, dst *Buffer, dstOff uint64, n uint64) {
	e.v.Call("copyBufferToBuffer", src.v, float64(srcOff), dst.v, float64(dstOff), float64(n))
}

// Clear zeroes n bytes of b at off.
func (e *Encoder) Clear(b *Buffer, off, n uint64) {
	e.v.Call("clearBuffer", b.v, float64(off), float64(n))
}

// ResolveQueries writes count timestamps (uint64 nanoseconds) of qs into dst at off.
func (e *Encoder) ResolveQueries(qs *QuerySet, first, count uint32, dst *Buffer, off uint64) {
	e.v.Call("resolveQuerySet", qs.v, first, count, dst.v, float64(off))
}

// Submit finishes the encoder and submits its command buffer. Its validation errors are
// recorded for the next Check rather than awaited here (see deferred).
func (e *Encoder) Submit() error {
	e.d.submits.Add(1)
	e.d.deferred("submit", func() {
		cmd := e.v.Call("finish")
		e.d.queue.Call("submit", []any{cmd})
	})
	e.v = js.Undefined()
	return e.d.Check()
}

// Discard drops an encoder that will not be submitted.
func (e *Encoder) Discard() { e.v = js.Undefined() }

// QuerySet holds timestamp queries.
type QuerySet struct {
	v     js.Value
	Count uint32
}

// CreateTimestampQueries makes a set of count timestamp slots (needs HasTimestamp).
func (d *Device) CreateTimestampQueries(count uint32) (*QuerySet, error) {
	if !d.HasTimestamp {
		return nil, fmt.Errorf("%w: adapter has no timestamp-query feature", ErrValidation)
	}
	var v js.Value
	if err := d.scoped("createQuerySet", func() {
		v = d.v.Call("createQuerySet", object(map[string]any{"type": "timestamp", "count": count}))
	}); err != nil {
		return nil, err
	}
	return &QuerySet{v: v, Count: count}, nil
}

// Release destroys the query set.
func (q *QuerySet) Release() {
	if q != nil && !q.v.IsUndefined() {
		q.v.Call("destroy")
		q.v = js.Undefined()
	}
}
