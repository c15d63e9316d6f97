// abi.h: the subset of webgpu.h that wspec uses, written from the ABI of the pinned Dawn
// build (../shared/webgpu/abi-layout.txt, Dawn a562d1dac3, 2025-06-27). Struct layouts and enum
// values here are that build's, NOT webgpu-headers HEAD's (which renumbered WGPUFeatureName and
// changed WGPUInstanceDescriptor). abi_test.go checks every size and offset against the file.
#ifndef WSPEC_WGPU_ABI_H
#define WSPEC_WGPU_ABI_H
#include <stddef.h>
#include <stdint.h>

typedef uint32_t WGPUBool;
typedef uint32_t WGPUFlagsEnum;
typedef uint64_t WGPUFlags64;
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUQuerySetImpl *WGPUQuerySet;
typedef void *WGPUSampler;
typedef void *WGPUTextureView;
typedef void *WGPUSurface;

typedef struct WGPUStringView { const char *data; size_t length; } WGPUStringView;
typedef struct WGPUChainedStruct { struct WGPUChainedStruct *next; uint32_t sType; } WGPUChainedStruct;
typedef struct WGPUFuture { uint64_t id; } WGPUFuture;
typedef struct WGPUFutureWaitInfo { WGPUFuture future; WGPUBool completed; } WGPUFutureWaitInfo;

typedef struct WGPUInstanceCapabilities {
  WGPUChainedStruct *nextInChain; WGPUBool timedWaitAnyEnable; size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;
typedef struct WGPUInstanceDescriptor {
  WGPUChainedStruct *nextInChain; WGPUInstanceCapabilities capabilities;
} WGPUInstanceDescriptor;
typedef struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain; size_t enabledToggleCount; const char *const *enabledToggles;
  size_t disabledToggleCount; const char *const *disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct WGPURequestAdapterOptions {
  WGPUChainedStruct *nextInChain; uint32_t featureLevel; uint32_t powerPreference;
  WGPUBool forceFallbackAdapter; uint32_t backendType; WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct *nextInChain; WGPUStringView vendor, architecture, device, description;
  uint32_t backendType, adapterType, vendorID, deviceID, subgroupMinSize, subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPUMemoryHeapInfo { uint64_t properties; uint64_t size; } WGPUMemoryHeapInfo;
typedef struct WGPUAdapterPropertiesMemoryHeaps {
  WGPUChainedStruct chain; size_t heapCount; const WGPUMemoryHeapInfo *heapInfo;
} WGPUAdapterPropertiesMemoryHeaps;

typedef struct WGPULimits {
  WGPUChainedStruct *nextInChain;
  uint32_t maxTextureDimension1D, maxTextureDimension2D, maxTextureDimension3D, maxTextureArrayLayers;
  uint32_t maxBindGroups, maxBindGroupsPlusVertexBuffers, maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout, maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage, maxSamplersPerShaderStage, maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage, maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize, maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment, minStorageBufferOffsetAlignment, maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes, maxVertexBufferArrayStride, maxInterStageShaderVariables;
  uint32_t maxColorAttachments, maxColorAttachmentBytesPerSample, maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup, maxComputeWorkgroupSizeX, maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ, maxComputeWorkgroupsPerDimension, maxImmediateSize;
} WGPULimits;

typedef struct WGPUSupportedFeatures { size_t featureCount; const uint32_t *features; } WGPUSupportedFeatures;

typedef void (*WGPURequestAdapterCallback)(uint32_t status, WGPUAdapter adapter, WGPUStringView message, void *u1, void *u2);
typedef void (*WGPURequestDeviceCallback)(uint32_t status, WGPUDevice device, WGPUStringView message, void *u1, void *u2);
typedef void (*WGPUDeviceLostCallback)(WGPUDevice const *device, uint32_t reason, WGPUStringView message, void *u1, void *u2);
typedef void (*WGPUUncapturedErrorCallback)(WGPUDevice const *device, uint32_t type, WGPUStringView message, void *u1, void *u2);
typedef void (*WGPUBufferMapCallback)(uint32_t status, WGPUStringView message, void *u1, void *u2);
typedef void (*WGPUPopErrorScopeCallback)(uint32_t status, uint32_t type, WGPUStringView message, void *u1, void *u2);
typedef void (*WGPUQueueWorkDoneCallback)(uint32_t status, WGPUStringView message, void *u1, void *u2);
struct WGPUCompilationInfo;
typedef void (*WGPUCompilationInfoCallback)(uint32_t status, struct WGPUCompilationInfo const *info, void *u1, void *u2);

#define WSPEC_CALLBACK_INFO(Name, Fn) \
  typedef struct Name { WGPUChainedStruct *nextInChain; uint32_t mode; Fn callback; void *userdata1; void *userdata2; } Name;
WSPEC_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback)
WSPEC_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback)
WSPEC_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback)
WSPEC_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback)
WSPEC_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback)
WSPEC_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback)
WSPEC_CALLBACK_INFO(WGPUCompilationInfoCallbackInfo, WGPUCompilationInfoCallback)
typedef struct WGPUUncapturedErrorCallbackInfo {
  WGPUChainedStruct *nextInChain; WGPUUncapturedErrorCallback callback; void *userdata1; void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPUQueueDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUQueueDescriptor;
typedef struct WGPUDeviceDescriptor {
  WGPUChainedStruct *nextInChain; WGPUStringView label; size_t requiredFeatureCount;
  const uint32_t *requiredFeatures; const WGPULimits *requiredLimits; WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo; WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
  WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUFlags64 usage; uint64_t size; WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;
typedef struct WGPUShaderModuleDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUShaderModuleDescriptor;
typedef struct WGPUShaderSourceWGSL { WGPUChainedStruct chain; WGPUStringView code; } WGPUShaderSourceWGSL;
typedef struct WGPUCompilationMessage {
  WGPUChainedStruct *nextInChain; WGPUStringView message; uint32_t type;
  uint64_t lineNum, linePos, offset, length;
} WGPUCompilationMessage;
typedef struct WGPUCompilationInfo {
  WGPUChainedStruct *nextInChain; size_t messageCount; const WGPUCompilationMessage *messages;
} WGPUCompilationInfo;
typedef struct WGPUConstantEntry { WGPUChainedStruct *nextInChain; WGPUStringView key; double value; } WGPUConstantEntry;
typedef struct WGPUComputeState {
  WGPUChainedStruct *nextInChain; WGPUShaderModule module; WGPUStringView entryPoint;
  size_t constantCount; const WGPUConstantEntry *constants;
} WGPUComputeState;
typedef struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUPipelineLayout layout; WGPUComputeState compute;
} WGPUComputePipelineDescriptor;
typedef struct WGPUBindGroupEntry {
  WGPUChainedStruct *nextInChain; uint32_t binding; WGPUBuffer buffer; uint64_t offset; uint64_t size;
  WGPUSampler sampler; WGPUTextureView textureView;
} WGPUBindGroupEntry;
typedef struct WGPUBindGroupDescriptor {
  WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUBindGroupLayout layout;
  size_t entryCount; const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;
typedef struct WGPUCommandEncoderDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUCommandEncoderDescriptor;
typedef struct WGPUCommandBufferDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUCommandBufferDescriptor;
typedef struct WGPUPassTimestampWrites {
  WGPUChainedStruct *nextInChain; WGPUQuerySet querySet; uint32_t beginningOfPassWriteIndex, endOfPassWriteIndex;
} WGPUPassTimestampWrites;
typedef struct WGPUComputePassDescriptor {
  WGPUChainedStruct *nextInChain; WGPUStringView label; const WGPUPassTimestampWrites *timestampWrites;
} WGPUComputePassDescriptor;
typedef struct WGPUQuerySetDescriptor {
  WGPUChainedStruct *nextInChain; WGPUStringView label; uint32_t type; uint32_t count;
} WGPUQuerySetDescriptor;

// Enum values of this build.
enum {
  WSPEC_STYPE_SHADER_SOURCE_WGSL = 0x00000002,
  WSPEC_STYPE_DAWN_TOGGLES = 0x0005000A,
  WSPEC_CALLBACK_MODE_WAIT_ANY_ONLY = 0x00000001,
  WSPEC_CALLBACK_MODE_ALLOW_SPONTANEOUS = 0x00000003,
  WSPEC_FEATURE_TIMESTAMP_QUERY = 0x00000003,
  WSPEC_FEATURE_SHADER_F16 = 0x0000000A,
  WSPEC_FEATURE_SUBGROUPS = 0x00000011,
  WSPEC_FEATURE_MEMORY_HEAPS = 0x00050015,
  WSPEC_STYPE_MEMORY_HEAPS = 0x00050013,
  WSPEC_STATUS_SUCCESS = 0x00000001,
  WSPEC_WAIT_SUCCESS = 0x00000001,
  WSPEC_WAIT_TIMED_OUT = 0x00000002,
  WSPEC_MAP_READ = 0x00000001,
  WSPEC_QUERY_TIMESTAMP = 0x00000002,
  WSPEC_ERROR_FILTER_VALIDATION = 0x00000001,
  WSPEC_ERROR_TYPE_NO_ERROR = 0x00000001,
  WSPEC_FEATURE_LEVEL_CORE = 0x00000002,
};
#endif
