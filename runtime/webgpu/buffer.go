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

// Buffer is a device buffer.
type Buffer struct {
	d     *Device
	h     C.WGPUBuffer
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
	desc := (*C.WGPUBufferDescriptor)(C.calloc(1, C.sizeof_WGPUBufferDescriptor))
	defer C.free(unsafe.Pointer(desc))
	clabel := C.CString(label)
	defer C.free(unsafe.Pointer(clabel))
	desc.label = stringView(clabel, len(label))
	desc.usage = C.WGPUFlags64(usage)
	desc.size = C.uint64_t(size)
	var h C.WGPUBuffer
	if err := d.scoped("createBuffer "+label, func() { h = C.w_wgpuDeviceCreateBuffer(d.h, desc) }); err != nil {
		if h != nil {
			C.w_wgpuBufferRelease(h)
		}
		return nil, err
	}
	return &Buffer{d: d, h: h, Size: size, Usage: usage, Label: label}, nil
}

// Write copies data into the buffer at offset through the queue (offset and length multiples of 4).
func (b *Buffer) Write(offset uint64, data []byte) {
	if len(data) == 0 {
		return
	}
	if offset+uint64(len(data)) > b.Size || offset%4 != 0 || len(data)%4 != 0 {
		panic(fmt.Sprintf("webgpu: write of %d bytes at %d into %q of %d bytes", len(data), offset, b.Label, b.Size))
	}
	C.w_wgpuQueueWriteBuffer(b.d.queue, b.h, C.uint64_t(offset), unsafe.Pointer(&data[0]), C.size_t(len(data)))
}

// Read maps a MapRead buffer and copies size bytes at offset into dst.
func (b *Buffer) Read(offset uint64, dst []byte) error {
	req := (*C.wspec_request)(C.calloc(1, C.sizeof_wspec_request))
	defer C.free(unsafe.Pointer(req))
	n := uint64(len(dst))
	f := C.w_wgpuBufferMapAsync(b.h, C.WSPEC_MAP_READ, C.size_t(offset), C.size_t(n), C.wspec_map_cb(req))
	if err := b.d.in.wait(f, "mapAsync "+b.Label); err != nil {
		return err
	}
	if req.status != C.WSPEC_STATUS_SUCCESS {
		if err := b.d.Check(); err != nil {
			return err
		}
		return fmt.Errorf("%w: mapping %q: %s", ErrValidation, b.Label, C.GoString(&req.message[0]))
	}
	p := C.w_wgpuBufferGetConstMappedRange(b.h, C.size_t(offset), C.size_t(n))
	if p == nil {
		C.w_wgpuBufferUnmap(b.h)
		return fmt.Errorf("%w: no mapped range for %q", ErrValidation, b.Label)
	}
	copy(dst, unsafe.Slice((*byte)(p), n))
	C.w_wgpuBufferUnmap(b.h)
	return b.d.Check()
}

// Release destroys the buffer.
func (b *Buffer) Release() {
	if b != nil && b.h != nil {
		C.w_wgpuBufferDestroy(b.h)
		C.w_wgpuBufferRelease(b.h)
		b.h = nil
	}
}
