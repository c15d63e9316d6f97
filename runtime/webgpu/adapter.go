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

// AdapterType is discrete GPU, integrated GPU, CPU or unknown.
type AdapterType uint32

func (t AdapterType) String() string {
	switch t {
	case 1:
		return "discrete-gpu"
	case 2:
		return "integrated-gpu"
	case 3:
		return "cpu"
	}
	return "unknown"
}

// Limits are the adapter or device limits that matter for compute.
type Limits struct {
	MaxStorageBufferBindingSize       uint64 `json:"max_storage_buffer_binding_size"`
	MaxUniformBufferBindingSize       uint64 `json:"max_uniform_buffer_binding_size"`
	MaxBufferSize                     uint64 `json:"max_buffer_size"`
	MaxStorageBuffersPerShaderStage   uint32 `json:"max_storage_buffers_per_shader_stage"`
	MaxBindGroups                     uint32 `json:"max_bind_groups"`
	MinStorageBufferOffsetAlignment   uint32 `json:"min_storage_buffer_offset_alignment"`
	MaxComputeWorkgroupStorageSize    uint32 `json:"max_compute_workgroup_storage_size"`
	MaxComputeInvocationsPerWorkgroup uint32 `json:"max_compute_invocations_per_workgroup"`
	MaxComputeWorkgroupSizeX          uint32 `json:"max_compute_workgroup_size_x"`
	MaxComputeWorkgroupsPerDimension  uint32 `json:"max_compute_workgroups_per_dimension"`
}

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

// AdapterInfo describes an adapter.
type AdapterInfo struct {
	Vendor       string      `json:"vendor"`
	Architecture string      `json:"architecture"`
	Device       string      `json:"device"`
	Description  string      `json:"description"`
	Backend      Backend     `json:"-"`
	BackendName  string      `json:"backend"`
	Type         AdapterType `json:"-"`
	TypeName     string      `json:"type"`
	VendorID     uint32      `json:"vendor_id"`
	DeviceID     uint32      `json:"device_id"`
	SubgroupMin  uint32      `json:"subgroup_min_size"`
	SubgroupMax  uint32      `json:"subgroup_max_size"`
	Features     []string    `json:"features"`
	Limits       Limits      `json:"limits"`
	// MemoryHeaps are the adapter's memory heaps, where it reports them (Dawn's
	// adapter-properties-memory-heaps feature); nil otherwise.
	MemoryHeaps []MemoryHeap `json:"memory_heaps,omitempty"`
}

// MemoryHeap is one of an adapter's memory heaps.
type MemoryHeap struct {
	Size        uint64 `json:"size"`
	DeviceLocal bool   `json:"device_local"` // the device's own memory (a discrete GPU's VRAM)
	HostVisible bool   `json:"host_visible"`
}

// Name is a one-line name: "llvmpipe (LLVM 15.0.6, 256 bits) [vulkan, cpu]".
func (i AdapterInfo) Name() string {
	name := i.Device
	if name == "" {
		name = i.Description
	}
	return fmt.Sprintf("%s [%s, %s]", name, i.BackendName, i.TypeName)
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

// HasFeature reports whether the adapter offers the named feature.
func (a *Adapter) HasFeature(name string) bool {
	for _, f := range a.Info.Features {
		if f == name {
			return true
		}
	}
	return false
}

// Release frees the adapter.
func (a *Adapter) Release() {
	if a != nil && a.h != nil {
		C.w_wgpuAdapterRelease(a.h)
		a.h = nil
	}
}
