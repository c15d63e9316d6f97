//go:build !js

package webgpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Device is a logical device with its queue. Uncaptured errors and device loss are recorded
// by C callbacks and returned as Go errors by Check (and by every call that waits).
type Device struct {
	mu      sync.Mutex
	in      *Instance
	Adapter *Adapter
	h       C.WGPUDevice
	queue   C.WGPUQueue
	state   *C.wspec_device_state

	HasF16       bool // shader-f16 enabled: `enable f16;` compiles
	HasSubgroups bool // subgroups enabled: `enable subgroups;` compiles
	HasTimestamp bool // timestamp-query enabled
	Limits       Limits

	submits atomic.Uint64 // command buffers submitted (Submits)
}

// Submits is the number of command buffers submitted on the device so far: what a step or a
// drafter costs in submits, for tests and benchmarks.
func (d *Device) Submits() uint64 { return d.submits.Load() }

// RequestDevice creates a device with shader-f16, subgroups and timestamp-query when the
// adapter offers them, and with the adapter's maximum limits. Timestamp quantization (65.5 us
// on lavapipe) is turned off so per-kernel profiles are meaningful.
func (a *Adapter) RequestDevice() (*Device, error) {
	var want []C.uint32_t
	d := &Device{in: a.in, Adapter: a}
	for _, f := range []struct {
		id   C.uint32_t
		name string
		flag *bool
	}{
		{C.WSPEC_FEATURE_SHADER_F16, "shader-f16", &d.HasF16},
		{C.WSPEC_FEATURE_SUBGROUPS, "subgroups", &d.HasSubgroups},
		{C.WSPEC_FEATURE_TIMESTAMP_QUERY, "timestamp-query", &d.HasTimestamp},
	} {
		if a.HasFeature(f.name) {
			want = append(want, f.id)
			*f.flag = true
		}
	}
	// C memory for everything Dawn reads.
	desc := (*C.WGPUDeviceDescriptor)(C.calloc(1, C.sizeof_WGPUDeviceDescriptor))
	defer C.free(unsafe.Pointer(desc))
	feats := (*C.uint32_t)(C.calloc(C.size_t(len(want)+1), 4))
	defer C.free(unsafe.Pointer(feats))
	copy(unsafe.Slice(feats, len(want)+1), want)
	limits := (*C.WGPULimits)(C.calloc(1, C.sizeof_WGPULimits))
	defer C.free(unsafe.Pointer(limits))
	*limits = a.limits
	toggles := (*C.WGPUDawnTogglesDescriptor)(C.calloc(1, C.sizeof_WGPUDawnTogglesDescriptor))
	defer C.free(unsafe.Pointer(toggles))
	// Timestamps unquantized. On a CPU adapter, no lazy zeroing of a buffer at its first use:
	// there the device's memory is the host's, freshly mapped (zero) pages, and clearing a
	// KV cache of 4 GiB faults in every page at once (18 s on a 2-core VM) where use faults in
	// only the pages written. Nothing reads memory it has not written (the KV cache test
	// poisons the cache with NaN to prove it for the largest buffers).
	disabled := []string{"timestamp_quantization"}
	if a.Info.TypeName == "cpu" {
		disabled = append(disabled, "lazy_clear_resource_on_first_use")
	}
	toggleList := (**C.char)(C.calloc(C.size_t(len(disabled)), C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(toggleList))
	names := unsafe.Slice(toggleList, len(disabled))
	for i, name := range disabled {
		names[i] = C.CString(name)
		defer C.free(unsafe.Pointer(names[i]))
	}
	toggles.chain.sType = C.WSPEC_STYPE_DAWN_TOGGLES
	toggles.disabledToggleCount = C.size_t(len(disabled))
	toggles.disabledToggles = toggleList
	desc.nextInChain = &toggles.chain
	desc.requiredFeatureCount = C.size_t(len(want))
	desc.requiredFeatures = feats
	desc.requiredLimits = limits
	d.state = (*C.wspec_device_state)(C.calloc(1, C.sizeof_wspec_device_state))
	C.wspec_device_callbacks(desc, d.state)

	req := (*C.wspec_request)(C.calloc(1, C.sizeof_wspec_request))
	defer C.free(unsafe.Pointer(req))
	f := C.w_wgpuAdapterRequestDevice(a.h, desc, C.wspec_device_cb(req))
	if err := a.in.wait(f, "requestDevice"); err != nil {
		return nil, err
	}
	if req.status != C.WSPEC_STATUS_SUCCESS || req.object == nil {
		return nil, fmt.Errorf("%w: requestDevice on %s: %s", ErrValidation, a.Info.Name(), C.GoString(&req.message[0]))
	}
	d.h = C.WGPUDevice(req.object)
	d.queue = C.w_wgpuDeviceGetQueue(d.h)
	var got C.WGPULimits
	C.w_wgpuDeviceGetLimits(d.h, &got)
	d.Limits = limitsFromC(&got)
	return d, nil
}

// Check returns the uncaptured errors since the last call, or the device loss, as one error.
func (d *Device) Check() error {
	if d.state.lost != 0 {
		return fmt.Errorf("%w (reason %d): %s", ErrDeviceLost, d.state.lost_reason, C.GoString(&d.state.lost_message[0]))
	}
	var buf [4096]C.char
	if n := C.wspec_take_errors(d.state, &buf[0], C.size_t(len(buf))); n > 0 {
		return fmt.Errorf("%w: %d uncaptured: %s", ErrValidation, n, C.GoString(&buf[0]))
	}
	return nil
}

// scoped runs fn inside a validation error scope and returns the scope's error, if any.
func (d *Device) scoped(what string, fn func()) error {
	C.w_wgpuDevicePushErrorScope(d.h, C.WSPEC_ERROR_FILTER_VALIDATION)
	fn()
	req := (*C.wspec_request)(C.calloc(1, C.sizeof_wspec_request))
	defer C.free(unsafe.Pointer(req))
	f := C.w_wgpuDevicePopErrorScope(d.h, C.wspec_pop_cb(req))
	if err := d.in.wait(f, what); err != nil {
		return err
	}
	if req.kind != C.WSPEC_ERROR_TYPE_NO_ERROR && req.kind != 0 {
		return fmt.Errorf("%w: %s: %s", ErrValidation, what, strings.TrimSpace(C.GoString(&req.message[0])))
	}
	return d.Check()
}

// WaitIdle blocks until all submitted work has finished.
func (d *Device) WaitIdle() error {
	req := (*C.wspec_request)(C.calloc(1, C.sizeof_wspec_request))
	defer C.free(unsafe.Pointer(req))
	f := C.w_wgpuQueueOnSubmittedWorkDone(d.queue, C.wspec_done_cb(req))
	if err := d.in.wait(f, "onSubmittedWorkDone"); err != nil {
		return err
	}
	return d.Check()
}

// Release destroys the device and frees its queue; the error state stays allocated until
// the device's callbacks can no longer run.
func (d *Device) Release() {
	if d == nil || d.h == nil {
		return
	}
	C.w_wgpuQueueRelease(d.queue)
	C.w_wgpuDeviceDestroy(d.h)
	C.w_wgpuDeviceRelease(d.h)
	d.h = nil
}

// Lock and Unlock serialise users of one device across goroutines (Dawn devices are not
// thread-safe without implicit synchronisation).
func (d *Device) Lock()   { d.mu.Lock() }
func (d *Device) Unlock() { d.mu.Unlock() }

// ProcessEvents lets the library run its deferred work: callbacks, and freeing the memory of
// destroyed buffers whose last use has completed.
func (d *Device) ProcessEvents() {
	if d != nil && d.h != nil {
		C.w_wgpuInstanceProcessEvents(d.in.h)
	}
}
