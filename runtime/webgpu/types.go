package webgpu

// The binding's types, errors and constants that do not depend on how the device is reached:
// the same for the cgo binding (Dawn, native builds) and the syscall/js one (the browser).

import (
	"errors"
	"fmt"
	"strings"
	"time"
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

// HasFeature reports whether the adapter offers the named feature.
func (a *Adapter) HasFeature(name string) bool {
	for _, f := range a.Info.Features {
		if f == name {
			return true
		}
	}
	return false
}

// bufferSize is a buffer's size rounded up to a multiple of 4 (at least 4), or an error when
// that exceeds the device's maxBufferSize.
func bufferSize(label string, size, limit uint64) (uint64, error) {
	size = max(4, (size+3)&^3)
	if size > limit {
		return 0, fmt.Errorf("%w: buffer %q of %d bytes exceeds the device's maxBufferSize %d", ErrValidation, label, size, limit)
	}
	return size, nil
}

// BufferUsage flags of WGPUBufferUsage.
type BufferUsage uint64

// Buffer usages (the same numbers in every Dawn generation so far).
const (
	UsageMapRead      BufferUsage = 0x001
	UsageMapWrite     BufferUsage = 0x002
	UsageCopySrc      BufferUsage = 0x004
	UsageCopyDst      BufferUsage = 0x008
	UsageUniform      BufferUsage = 0x040
	UsageStorage      BufferUsage = 0x080
	UsageQueryResolve BufferUsage = 0x200
)

// CompileError is a WGSL compilation failure with the compiler's messages, each
// "line:column: error: text", prefixed by the kernel's name.
type CompileError struct {
	Kernel   string
	Messages string
}

func (e *CompileError) Error() string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(e.Messages), "\n") {
		fmt.Fprintf(&b, "\n  %s.wgsl:%s", e.Kernel, line)
	}
	return fmt.Sprintf("compiling kernel %s:%s", e.Kernel, b.String())
}

func (e *CompileError) Unwrap() error { return ErrValidation }

// Binding binds a buffer range to a @binding of group 0. Size 0 means "to the end"; a nil
// Buffer leaves its @binding out (one that the kernel does not declare).
type Binding struct {
	Buffer *Buffer
	Offset uint64
	Size   uint64
}

// waitTimeout bounds every wait on a future; a healthy device answers long before.
const waitTimeout = 120 * time.Second

// Backend names a WebGPU backend (values of this Dawn build).
type Backend uint32

// Backends of this Dawn build's WGPUBackendType.
const (
	BackendUndefined Backend = 0
	BackendNull      Backend = 1
	BackendWebGPU    Backend = 2
	BackendD3D11     Backend = 3
	BackendD3D12     Backend = 4
	BackendMetal     Backend = 5
	BackendVulkan    Backend = 6
	BackendOpenGL    Backend = 7
	BackendOpenGLES  Backend = 8
)

var backendNames = map[Backend]string{BackendUndefined: "undefined", BackendNull: "null", BackendWebGPU: "webgpu",
	BackendD3D11: "d3d11", BackendD3D12: "d3d12", BackendMetal: "metal", BackendVulkan: "vulkan",
	BackendOpenGL: "opengl", BackendOpenGLES: "opengles"}

func (b Backend) String() string {
	if s, ok := backendNames[b]; ok {
		return s
	}
	return fmt.Sprintf("backend(%d)", uint32(b))
}

// ParseBackend reads a backend name as String writes it.
func ParseBackend(s string) (Backend, error) {
	for b, name := range backendNames {
		if strings.EqualFold(s, name) {
			return b, nil
		}
	}
	return 0, fmt.Errorf("unknown backend %q (want vulkan, metal, d3d12, d3d11, opengl, opengles)", s)
}

// Sentinel errors; the concrete errors wrap them with %w.
var (
	ErrLibraryNotFound   = errors.New("webgpu library not found")
	ErrLibraryLoad       = errors.New("webgpu library failed to load")
	ErrUnknownGeneration = errors.New("unknown Dawn generation")
	ErrNoAdapter         = errors.New("no WebGPU adapter")
	ErrDeviceLost        = errors.New("webgpu device lost")
	ErrValidation        = errors.New("webgpu error")
	ErrTimeout           = errors.New("webgpu wait timed out")
)
