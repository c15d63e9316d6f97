//go:build !js

package webgpu

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sort"
	"unsafe"
)

func limitsFromC(l *C.WGPULimits) Limits {
	return Limits{
		MaxStorageBufferBindingSize:       uint64(l.maxStorageBufferBindingSize),
		MaxUniformBufferBindingSize:       uint64(l.maxUniformBufferBindingSize),
		MaxBufferSize:                     uint64(l.maxBufferSize),
		MaxStorageBuffersPerShaderStage:   uint32(l.maxStorageBuffersPerShaderStage),
		MaxBindGroups:                     uint32(l.maxBindGroups),
		MinStorageBufferOffsetAlignment:   uint32(l.minStorageBufferOffsetAlignment),
		MaxComputeWorkgroupStorageSize:    uint32(l.maxComputeWorkgroupStorageSize),
		MaxComputeInvocationsPerWorkgroup: uint32(l.maxComputeInvocationsPerWorkgroup),
		MaxComputeWorkgroupSizeX:          uint32(l.maxComputeWorkgroupSizeX),
		MaxComputeWorkgroupsPerDimension:  uint32(l.maxComputeWorkgroupsPerDimension),
	}
}

// Feature names of this build that wspec uses (numbers differ from webgpu-headers HEAD).
var featureNames = map[uint32]string{
	C.WSPEC_FEATURE_TIMESTAMP_QUERY: "timestamp-query",
	C.WSPEC_FEATURE_SHADER_F16:      "shader-f16",
	C.WSPEC_FEATURE_SUBGROUPS:       "subgroups",
	0x12:                            "core-features-and-limits",
	0x09:                            "indirect-first-instance",
	0x0C:                            "bgra8unorm-storage",
	0x0D:                            "float32-filterable",
	0x0E:                            "float32-blendable",
	0x0F:                            "clip-distances",
	0x10:                            "dual-source-blending",
	0x01:                            "depth-clip-control",
	0x02:                            "depth32float-stencil8",
	0x04:                            "texture-compression-bc",
	0x07:                            "texture-compression-etc2",
	0x08:                            "texture-compression-astc",
	0x0B:                            "rg11b10ufloat-renderable",
	0x00050037:                      "chromium-experimental-subgroup-matrix",
	0x00050003:                      "chromium-experimental-timestamp-query-inside-passes",
}

// Adapter is a physical device as WebGPU sees it.
type Adapter struct {
	in     *Instance
	h      C.WGPUAdapter
	limits C.WGPULimits
	Info   AdapterInfo
}

func newAdapter(in *Instance, h C.WGPUAdapter) (*Adapter, error) {
	a := &Adapter{in: in, h: h}
	info := (*C.WGPUAdapterInfo)(C.calloc(1, C.sizeof_WGPUAdapterInfo))
	defer C.free(unsafe.Pointer(info))
	var heaps *C.WGPUAdapterPropertiesMemoryHeaps
	if C.w_wgpuAdapterHasFeature(h, C.WSPEC_FEATURE_MEMORY_HEAPS) != 0 {
		heaps = (*C.WGPUAdapterPropertiesMemoryHeaps)(C.calloc(1, C.sizeof_WGPUAdapterPropertiesMemoryHeaps))
		defer C.free(unsafe.Pointer(heaps))
		heaps.chain.sType = C.WSPEC_STYPE_MEMORY_HEAPS
		info.nextInChain = &heaps.chain
	}
	if C.w_wgpuAdapterGetInfo(h, info) != C.WSPEC_STATUS_SUCCESS {
		return nil, fmt.Errorf("%w: wgpuAdapterGetInfo failed", ErrValidation)
	}
	var memHeaps []MemoryHeap
	if heaps != nil {
		for _, hi := range unsafe.Slice(heaps.heapInfo, int(heaps.heapCount)) {
			memHeaps = append(memHeaps, MemoryHeap{Size: uint64(hi.size), DeviceLocal: hi.properties&1 != 0, HostVisible: hi.properties&2 != 0})
		}
		C.w_wgpuAdapterPropertiesMemoryHeapsFreeMembers(*heaps)
		info.nextInChain = nil
	}
	a.Info = AdapterInfo{
		Vendor: goString(info.vendor), Architecture: goString(info.architecture),
		Device: goString(info.device), Description: goString(info.description),
		Backend: Backend(info.backendType), Type: AdapterType(info.adapterType),
		VendorID: uint32(info.vendorID), DeviceID: uint32(info.deviceID),
		SubgroupMin: uint32(info.subgroupMinSize), SubgroupMax: uint32(info.subgroupMaxSize),
	}
	a.Info.MemoryHeaps = memHeaps
	a.Info.BackendName = a.Info.Backend.String()
	a.Info.TypeName = a.Info.Type.String()
	C.w_wgpuAdapterInfoFreeMembers(*info)
	if C.w_wgpuAdapterGetLimits(h, &a.limits) != C.WSPEC_STATUS_SUCCESS {
		return nil, fmt.Errorf("%w: wgpuAdapterGetLimits failed", ErrValidation)
	}
	a.limits.nextInChain = nil
	a.Info.Limits = limitsFromC(&a.limits)
	var feats C.WGPUSupportedFeatures
	C.w_wgpuAdapterGetFeatures(h, &feats)
	list := unsafe.Slice(feats.features, int(feats.featureCount))
	for _, f := range list {
		if name, ok := featureNames[uint32(f)]; ok {
			a.Info.Features = append(a.Info.Features, name)
		}
	}
	C.w_wgpuSupportedFeaturesFreeMembers(feats)
	sort.Strings(a.Info.Features)
	return a, nil
}

// Release frees the adapter.
func (a *Adapter) Release() {
	if a != nil && a.h != nil {
		C.w_wgpuAdapterRelease(a.h)
		a.h = nil
	}
}
