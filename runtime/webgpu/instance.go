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

// Instance is a WebGPU instance with timed WaitAny enabled.
type Instance struct {
	h C.WGPUInstance
}

// NewInstance loads the library if needed (FindLibrary's path) and creates an instance.
func NewInstance() (*Instance, error) {
	if err := Load(""); err != nil {
		return nil, err
	}
	desc := (*C.WGPUInstanceDescriptor)(C.calloc(1, C.sizeof_WGPUInstanceDescriptor))
	defer C.free(unsafe.Pointer(desc))
	desc.capabilities.timedWaitAnyEnable = 1
	desc.capabilities.timedWaitAnyMaxCount = 1
	h := C.w_wgpuCreateInstance(desc)
	if h == nil {
		return nil, fmt.Errorf("%w: wgpuCreateInstance returned null", ErrLibraryLoad)
	}
	return &Instance{h: h}, nil
}

// Release frees the instance.
func (in *Instance) Release() {
	if in != nil && in.h != nil {
		C.w_wgpuInstanceRelease(in.h)
		in.h = nil
	}
}

// wait blocks until the future completes (its callback has then run) or the timeout passes.
func (in *Instance) wait(f C.WGPUFuture, what string) error {
	info := (*C.WGPUFutureWaitInfo)(C.calloc(1, C.sizeof_WGPUFutureWaitInfo))
	defer C.free(unsafe.Pointer(info))
	info.future = f
	switch st := C.w_wgpuInstanceWaitAny(in.h, 1, info, C.uint64_t(waitTimeout.Nanoseconds())); st {
	case C.WSPEC_WAIT_SUCCESS:
		return nil
	case C.WSPEC_WAIT_TIMED_OUT:
		return fmt.Errorf("%w: %s after %v", ErrTimeout, what, waitTimeout)
	default:
		return fmt.Errorf("%w: WaitAny for %s returned status %d", ErrValidation, what, st)
	}
}

// requestAdapter asks for one adapter; nil (and no error) when the request finds none.
func (in *Instance) requestAdapter(backend Backend, fallback bool, power uint32) (*Adapter, error) {
	opts := (*C.WGPURequestAdapterOptions)(C.calloc(1, C.sizeof_WGPURequestAdapterOptions))
	defer C.free(unsafe.Pointer(opts))
	opts.featureLevel = C.WSPEC_FEATURE_LEVEL_CORE
	opts.backendType = C.uint32_t(backend)
	opts.powerPreference = C.uint32_t(power)
	if fallback {
		opts.forceFallbackAdapter = 1
	}
	req := (*C.wspec_request)(C.calloc(1, C.sizeof_wspec_request))
	defer C.free(unsafe.Pointer(req))
	f := C.w_wgpuInstanceRequestAdapter(in.h, opts, C.wspec_adapter_cb(req))
	if err := in.wait(f, "requestAdapter"); err != nil {
		return nil, err
	}
	if req.status != C.WSPEC_STATUS_SUCCESS || req.object == nil {
		return nil, nil
	}
	return newAdapter(in, C.WGPUAdapter(req.object))
}

// Adapters lists the adapters this machine offers: one request per backend and power
// preference (this Dawn build exports no enumeration call), with duplicates removed.
func (in *Instance) Adapters() ([]*Adapter, error) {
	var out []*Adapter
	seen := map[string]bool{}
	backends := []Backend{BackendVulkan, BackendMetal, BackendD3D12, BackendD3D11, BackendOpenGL, BackendOpenGLES}
	for _, b := range backends {
		for _, power := range []uint32{2, 1} { // high performance, then low power
			for _, fallback := range []bool{false, true} {
				a, err := in.requestAdapter(b, fallback, power)
				if err != nil {
					return nil, err
				}
				if a == nil {
					continue
				}
				key := fmt.Sprintf("%v/%x/%x/%s/%s", a.Info.Backend, a.Info.VendorID, a.Info.DeviceID, a.Info.Description, a.Info.Device)
				if seen[key] {
					a.Release()
					continue
				}
				seen[key] = true
				out = append(out, a)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w found; %s", ErrNoAdapter, SetupHint)
	}
	return out, nil
}
