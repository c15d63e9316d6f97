//go:build !js

package webgpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Encoder records copies and compute passes into one command buffer for one submit.
type Encoder struct {
	d *Device
	h C.WGPUCommandEncoder
}

// NewEncoder starts a command encoder.
func (d *Device) NewEncoder() *Encoder {
	return &Encoder{d: d, h: C.w_wgpuDeviceCreateCommandEncoder(d.h, nil)}
}

// Pass is an open compute pass.
type Pass struct {
	h C.WGPUComputePassEncoder
}

// BeginPass opens a compute pass. With a query set, the pass writes timestamps at its
// beginning and end into slots begin and begin+1.
func (e *Encoder) BeginPass(qs *QuerySet, begin uint32) *Pass {
	if qs == nil {
		return &Pass{h: C.w_wgpuCommandEncoderBeginComputePass(e.h, nil)}
	}
	desc := (*C.WGPUComputePassDescriptor)(C.calloc(1, C.sizeof_WGPUComputePassDescriptor))
	defer C.free(unsafe.Pointer(desc))
	tw := (*C.WGPUPassTimestampWrites)(C.calloc(1, C.sizeof_WGPUPassTimestampWrites))
	defer C.free(unsafe.Pointer(tw))
	tw.querySet = qs.h
	tw.beginningOfPassWriteIndex = C.uint32_t(begin)
	tw.endOfPassWriteIndex = C.uint32_t(begin + 1)
	desc.timestampWrites = tw
	return &Pass{h: C.w_wgpuCommandEncoderBeginComputePass(e.h, desc)}
}

// Dispatch runs p with bind group g over x*y*z workgroups.
func (ps *Pass) Dispatch(p *ComputePipeline, g *BindGroup, x, y, z uint32) {
	C.w_wgpuComputePassEncoderSetPipeline(ps.h, p.h)
	C.w_wgpuComputePassEncoderSetBindGroup(ps.h, 0, g.h, 0, nil)
	C.w_wgpuComputePassEncoderDispatchWorkgroups(ps.h, C.uint32_t(x), C.uint32_t(y), C.uint32_t(z))
}

// End closes the pass.
func (ps *Pass) End() {
	C.w_wgpuComputePassEncoderEnd(ps.h)
	C.w_wgpuComputePassEncoderRelease(ps.h)
}

// Copy copies n bytes between buffers.
func (e *Encoder) Copy(src *Buffer, srcOff uint64, dst *Buffer, dstOff uint64, n uint64) {
	C.w_wgpuCommandEncoderCopyBufferToBuffer(e.h, src.h, C.uint64_t(srcOff), dst.h, C.uint64_t(dstOff), C.uint64_t(n))
}

// Clear zeroes n bytes of b at off.
func (e *Encoder) Clear(b *Buffer, off, n uint64) {
	C.w_wgpuCommandEncoderClearBuffer(e.h, b.h, C.uint64_t(off), C.uint64_t(n))
}

// ResolveQueries writes count timestamps (uint64 ticks of 1 ns) of qs into dst at off.
func (e *Encoder) ResolveQueries(qs *QuerySet, first, count uint32, dst *Buffer, off uint64) {
	C.w_wgpuCommandEncoderResolveQuerySet(e.h, qs.h, C.uint32_t(first), C.uint32_t(count), dst.h, C.uint64_t(off))
}

// Submit finishes the encoder and submits its command buffer; errors of encoding and
// validation come back here.
func (e *Encoder) Submit() error {
	e.d.submits.Add(1)
	var cmd C.WGPUCommandBuffer
	err := e.d.scoped("submit", func() {
		cmd = C.w_wgpuCommandEncoderFinish(e.h, nil)
		if cmd != nil {
			C.w_wgpuQueueSubmit(e.d.queue, 1, &cmd)
		}
	})
	if cmd != nil {
		C.w_wgpuCommandBufferRelease(cmd)
	}
	C.w_wgpuCommandEncoderRelease(e.h)
	e.h = nil
	return err
}

// Discard releases an encoder that will not be submitted.
func (e *Encoder) Discard() {
	if e.h != nil {
		C.w_wgpuCommandEncoderRelease(e.h)
		e.h = nil
	}
}

// QuerySet holds timestamp queries.
type QuerySet struct {
	h     C.WGPUQuerySet
	Count uint32
}

// CreateTimestampQueries makes a set of count timestamp slots (needs HasTimestamp).
func (d *Device) CreateTimestampQueries(count uint32) (*QuerySet, error) {
	if !d.HasTimestamp {
		return nil, fmt.Errorf("%w: adapter has no timestamp-query feature", ErrValidation)
	}
	desc := (*C.WGPUQuerySetDescriptor)(C.calloc(1, C.sizeof_WGPUQuerySetDescriptor))
	defer C.free(unsafe.Pointer(desc))
	desc._type = C.WSPEC_QUERY_TIMESTAMP
	desc.count = C.uint32_t(count)
	var h C.WGPUQuerySet
	if err := d.scoped("createQuerySet", func() { h = C.w_wgpuDeviceCreateQuerySet(d.h, desc) }); err != nil {
		return nil, err
	}
	return &QuerySet{h: h, Count: count}, nil
}

// Release frees the query set.
func (q *QuerySet) Release() {
	if q != nil && q.h != nil {
		C.w_wgpuQuerySetDestroy(q.h)
		C.w_wgpuQuerySetRelease(q.h)
		q.h = nil
	}
}
