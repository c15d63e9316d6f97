// layout.c: the size of every struct in abi.h and the offset of every field, for abi_test.go
// to compare with the measured layout of the pinned Dawn build (testdata/abi-layout.txt).
#include "layout.h"
#include <stddef.h>

#define S(T) {#T, sizeof(T), sizeof(T), 1},
#define F(T, f) {#T "." #f, offsetof(T, f), sizeof(((T *)0)->f), 0},
static const wspec_layout_entry entries[] = {
  S(WGPUStringView) F(WGPUStringView, data) F(WGPUStringView, length)
  S(WGPUChainedStruct) F(WGPUChainedStruct, next) F(WGPUChainedStruct, sType)
  S(WGPUFutureWaitInfo) F(WGPUFutureWaitInfo, future) F(WGPUFutureWaitInfo, completed)
  S(WGPUInstanceCapabilities) F(WGPUInstanceCapabilities, timedWaitAnyEnable) F(WGPUInstanceCapabilities, timedWaitAnyMaxCount)
  S(WGPUInstanceDescriptor) F(WGPUInstanceDescriptor, capabilities)
  S(WGPUDawnTogglesDescriptor) F(WGPUDawnTogglesDescriptor, chain) F(WGPUDawnTogglesDescriptor, enabledToggleCount)
  F(WGPUDawnTogglesDescriptor, enabledToggles) F(WGPUDawnTogglesDescriptor, disabledToggleCount) F(WGPUDawnTogglesDescriptor, disabledToggles)
  S(WGPURequestAdapterOptions) F(WGPURequestAdapterOptions, featureLevel) F(WGPURequestAdapterOptions, powerPreference)
  F(WGPURequestAdapterOptions, forceFallbackAdapter) F(WGPURequestAdapterOptions, backendType) F(WGPURequestAdapterOptions, compatibleSurface)
  S(WGPUAdapterInfo) F(WGPUAdapterInfo, vendor) F(WGPUAdapterInfo, architecture) F(WGPUAdapterInfo, device)
  F(WGPUAdapterInfo, description) F(WGPUAdapterInfo, backendType) F(WGPUAdapterInfo, adapterType) F(WGPUAdapterInfo, vendorID)
  F(WGPUAdapterInfo, deviceID) F(WGPUAdapterInfo, subgroupMinSize) F(WGPUAdapterInfo, subgroupMaxSize)
  S(WGPUMemoryHeapInfo) F(WGPUMemoryHeapInfo, properties) F(WGPUMemoryHeapInfo, size)
  S(WGPUAdapterPropertiesMemoryHeaps) F(WGPUAdapterPropertiesMemoryHeaps, chain) F(WGPUAdapterPropertiesMemoryHeaps, heapCount)
  F(WGPUAdapterPropertiesMemoryHeaps, heapInfo)
  S(WGPULimits) F(WGPULimits, maxBindGroups) F(WGPULimits, maxStorageBuffersPerShaderStage) F(WGPULimits, maxUniformBufferBindingSize)
  F(WGPULimits, maxStorageBufferBindingSize) F(WGPULimits, minUniformBufferOffsetAlignment) F(WGPULimits, minStorageBufferOffsetAlignment)
  F(WGPULimits, maxBufferSize) F(WGPULimits, maxComputeWorkgroupStorageSize) F(WGPULimits, maxComputeInvocationsPerWorkgroup)
  F(WGPULimits, maxComputeWorkgroupSizeX) F(WGPULimits, maxComputeWorkgroupsPerDimension) F(WGPULimits, maxImmediateSize)
  S(WGPUSupportedFeatures) F(WGPUSupportedFeatures, featureCount) F(WGPUSupportedFeatures, features)
  S(WGPURequestAdapterCallbackInfo) F(WGPURequestAdapterCallbackInfo, mode) F(WGPURequestAdapterCallbackInfo, callback) F(WGPURequestAdapterCallbackInfo, userdata1)
  S(WGPURequestDeviceCallbackInfo) F(WGPURequestDeviceCallbackInfo, mode) F(WGPURequestDeviceCallbackInfo, callback)
  S(WGPUDeviceLostCallbackInfo) F(WGPUDeviceLostCallbackInfo, callback) F(WGPUDeviceLostCallbackInfo, userdata2)
  S(WGPUBufferMapCallbackInfo) S(WGPUPopErrorScopeCallbackInfo) S(WGPUQueueWorkDoneCallbackInfo) S(WGPUCompilationInfoCallbackInfo)
  S(WGPUUncapturedErrorCallbackInfo) F(WGPUUncapturedErrorCallbackInfo, callback) F(WGPUUncapturedErrorCallbackInfo, userdata1)
  S(WGPUQueueDescriptor) F(WGPUQueueDescriptor, label)
  S(WGPUDeviceDescriptor) F(WGPUDeviceDescriptor, label) F(WGPUDeviceDescriptor, requiredFeatureCount) F(WGPUDeviceDescriptor, requiredFeatures)
  F(WGPUDeviceDescriptor, requiredLimits) F(WGPUDeviceDescriptor, defaultQueue) F(WGPUDeviceDescriptor, deviceLostCallbackInfo)
  F(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo)
  S(WGPUBufferDescriptor) F(WGPUBufferDescriptor, usage) F(WGPUBufferDescriptor, size) F(WGPUBufferDescriptor, mappedAtCreation)
  S(WGPUShaderModuleDescriptor) F(WGPUShaderModuleDescriptor, label)
  S(WGPUShaderSourceWGSL) F(WGPUShaderSourceWGSL, chain) F(WGPUShaderSourceWGSL, code)
  S(WGPUCompilationMessage) F(WGPUCompilationMessage, message) F(WGPUCompilationMessage, type) F(WGPUCompilationMessage, lineNum)
  F(WGPUCompilationMessage, linePos) F(WGPUCompilationMessage, offset) F(WGPUCompilationMessage, length)
  S(WGPUCompilationInfo) F(WGPUCompilationInfo, messageCount) F(WGPUCompilationInfo, messages)
  S(WGPUConstantEntry) F(WGPUConstantEntry, key) F(WGPUConstantEntry, value)
  S(WGPUComputeState) F(WGPUComputeState, module) F(WGPUComputeState, entryPoint) F(WGPUComputeState, constantCount) F(WGPUComputeState, constants)
  S(WGPUComputePipelineDescriptor) F(WGPUComputePipelineDescriptor, layout) F(WGPUComputePipelineDescriptor, compute)
  S(WGPUBindGroupEntry) F(WGPUBindGroupEntry, binding) F(WGPUBindGroupEntry, buffer) F(WGPUBindGroupEntry, offset)
  F(WGPUBindGroupEntry, size) F(WGPUBindGroupEntry, sampler) F(WGPUBindGroupEntry, textureView)
  S(WGPUBindGroupDescriptor) F(WGPUBindGroupDescriptor, layout) F(WGPUBindGroupDescriptor, entryCount) F(WGPUBindGroupDescriptor, entries)
  S(WGPUCommandEncoderDescriptor) S(WGPUCommandBufferDescriptor)
  S(WGPUPassTimestampWrites) F(WGPUPassTimestampWrites, querySet) F(WGPUPassTimestampWrites, beginningOfPassWriteIndex)
  F(WGPUPassTimestampWrites, endOfPassWriteIndex)
  S(WGPUComputePassDescriptor) F(WGPUComputePassDescriptor, label) F(WGPUComputePassDescriptor, timestampWrites)
  S(WGPUQuerySetDescriptor) F(WGPUQuerySetDescriptor, type) F(WGPUQuerySetDescriptor, count)
};

int wspec_layout_count(void) { return sizeof entries / sizeof entries[0]; }
wspec_layout_entry wspec_layout_at(int i) { return entries[i]; }
