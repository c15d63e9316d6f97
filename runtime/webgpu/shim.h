// shim.h: the C side of the binding. The library is loaded at run time (LoadLibraryExW on
// Windows, dlopen elsewhere); every entry point goes through a function pointer resolved by
// wspec_load. Callbacks are plain C functions that copy their results into C memory, so no Go
// pointer ever crosses into Dawn.
#ifndef WSPEC_SHIM_H
#define WSPEC_SHIM_H
#include "abi.h"

// The functions wspec calls. X(ret, name, params, args) for value returns, V(...) for void.
#define WSPEC_FUNCS(X, V) \
  X(WGPUInstance, wgpuCreateInstance, (const WGPUInstanceDescriptor *d), (d)) \
  V(wgpuInstanceRelease, (WGPUInstance i), (i)) \
  X(uint32_t, wgpuInstanceWaitAny, (WGPUInstance i, size_t n, WGPUFutureWaitInfo *f, uint64_t t), (i, n, f, t)) \
  V(wgpuInstanceProcessEvents, (WGPUInstance i), (i)) \
  X(WGPUFuture, wgpuInstanceRequestAdapter, (WGPUInstance i, const WGPURequestAdapterOptions *o, WGPURequestAdapterCallbackInfo c), (i, o, c)) \
  X(uint32_t, wgpuAdapterGetInfo, (WGPUAdapter a, WGPUAdapterInfo *info), (a, info)) \
  V(wgpuAdapterInfoFreeMembers, (WGPUAdapterInfo info), (info)) \
  V(wgpuAdapterPropertiesMemoryHeapsFreeMembers, (WGPUAdapterPropertiesMemoryHeaps h), (h)) \
  X(uint32_t, wgpuAdapterGetLimits, (WGPUAdapter a, WGPULimits *l), (a, l)) \
  X(WGPUBool, wgpuAdapterHasFeature, (WGPUAdapter a, uint32_t f), (a, f)) \
  V(wgpuAdapterGetFeatures, (WGPUAdapter a, WGPUSupportedFeatures *f), (a, f)) \
  V(wgpuSupportedFeaturesFreeMembers, (WGPUSupportedFeatures f), (f)) \
  X(WGPUFuture, wgpuAdapterRequestDevice, (WGPUAdapter a, const WGPUDeviceDescriptor *d, WGPURequestDeviceCallbackInfo c), (a, d, c)) \
  V(wgpuAdapterRelease, (WGPUAdapter a), (a)) \
  X(uint32_t, wgpuDeviceGetLimits, (WGPUDevice d, WGPULimits *l), (d, l)) \
  X(WGPUBool, wgpuDeviceHasFeature, (WGPUDevice d, uint32_t f), (d, f)) \
  X(WGPUQueue, wgpuDeviceGetQueue, (WGPUDevice d), (d)) \
  X(WGPUBuffer, wgpuDeviceCreateBuffer, (WGPUDevice d, const WGPUBufferDescriptor *b), (d, b)) \
  X(WGPUShaderModule, wgpuDeviceCreateShaderModule, (WGPUDevice d, const WGPUShaderModuleDescriptor *s), (d, s)) \
  X(WGPUComputePipeline, wgpuDeviceCreateComputePipeline, (WGPUDevice d, const WGPUComputePipelineDescriptor *p), (d, p)) \
  X(WGPUBindGroup, wgpuDeviceCreateBindGroup, (WGPUDevice d, const WGPUBindGroupDescriptor *b), (d, b)) \
  X(WGPUCommandEncoder, wgpuDeviceCreateCommandEncoder, (WGPUDevice d, const WGPUCommandEncoderDescriptor *e), (d, e)) \
  X(WGPUQuerySet, wgpuDeviceCreateQuerySet, (WGPUDevice d, const WGPUQuerySetDescriptor *q), (d, q)) \
  V(wgpuDevicePushErrorScope, (WGPUDevice d, uint32_t f), (d, f)) \
  X(WGPUFuture, wgpuDevicePopErrorScope, (WGPUDevice d, WGPUPopErrorScopeCallbackInfo c), (d, c)) \
  V(wgpuDeviceDestroy, (WGPUDevice d), (d)) \
  V(wgpuDeviceRelease, (WGPUDevice d), (d)) \
  V(wgpuQueueWriteBuffer, (WGPUQueue q, WGPUBuffer b, uint64_t off, const void *data, size_t n), (q, b, off, data, n)) \
  V(wgpuQueueSubmit, (WGPUQueue q, size_t n, const WGPUCommandBuffer *c), (q, n, c)) \
  X(WGPUFuture, wgpuQueueOnSubmittedWorkDone, (WGPUQueue q, WGPUQueueWorkDoneCallbackInfo c), (q, c)) \
  V(wgpuQueueRelease, (WGPUQueue q), (q)) \
  X(WGPUFuture, wgpuBufferMapAsync, (WGPUBuffer b, uint32_t mode, size_t off, size_t n, WGPUBufferMapCallbackInfo c), (b, mode, off, n, c)) \
  X(const void *, wgpuBufferGetConstMappedRange, (WGPUBuffer b, size_t off, size_t n), (b, off, n)) \
  V(wgpuBufferUnmap, (WGPUBuffer b), (b)) \
  V(wgpuBufferDestroy, (WGPUBuffer b), (b)) \
  V(wgpuBufferRelease, (WGPUBuffer b), (b)) \
  X(WGPUFuture, wgpuShaderModuleGetCompilationInfo, (WGPUShaderModule s, WGPUCompilationInfoCallbackInfo c), (s, c)) \
  V(wgpuShaderModuleRelease, (WGPUShaderModule s), (s)) \
  X(WGPUBindGroupLayout, wgpuComputePipelineGetBindGroupLayout, (WGPUComputePipeline p, uint32_t i), (p, i)) \
  V(wgpuComputePipelineRelease, (WGPUComputePipeline p), (p)) \
  V(wgpuBindGroupLayoutRelease, (WGPUBindGroupLayout l), (l)) \
  V(wgpuBindGroupRelease, (WGPUBindGroup g), (g)) \
  X(WGPUComputePassEncoder, wgpuCommandEncoderBeginComputePass, (WGPUCommandEncoder e, const WGPUComputePassDescriptor *d), (e, d)) \
  V(wgpuCommandEncoderCopyBufferToBuffer, (WGPUCommandEncoder e, WGPUBuffer s, uint64_t so, WGPUBuffer d, uint64_t dof, uint64_t n), (e, s, so, d, dof, n)) \
  V(wgpuCommandEncoderClearBuffer, (WGPUCommandEncoder e, WGPUBuffer b, uint64_t off, uint64_t n), (e, b, off, n)) \
  V(wgpuCommandEncoderResolveQuerySet, (WGPUCommandEncoder e, WGPUQuerySet q, uint32_t first, uint32_t n, WGPUBuffer d, uint64_t off), (e, q, first, n, d, off)) \
  X(WGPUCommandBuffer, wgpuCommandEncoderFinish, (WGPUCommandEncoder e, const WGPUCommandBufferDescriptor *d), (e, d)) \
  V(wgpuCommandEncoderRelease, (WGPUCommandEncoder e), (e)) \
  V(wgpuCommandBufferRelease, (WGPUCommandBuffer c), (c)) \
  V(wgpuComputePassEncoderSetPipeline, (WGPUComputePassEncoder p, WGPUComputePipeline pl), (p, pl)) \
  V(wgpuComputePassEncoderSetBindGroup, (WGPUComputePassEncoder p, uint32_t i, WGPUBindGroup g, size_t n, const uint32_t *o), (p, i, g, n, o)) \
  V(wgpuComputePassEncoderDispatchWorkgroups, (WGPUComputePassEncoder p, uint32_t x, uint32_t y, uint32_t z), (p, x, y, z)) \
  V(wgpuComputePassEncoderEnd, (WGPUComputePassEncoder p), (p)) \
  V(wgpuComputePassEncoderRelease, (WGPUComputePassEncoder p), (p)) \
  V(wgpuQuerySetDestroy, (WGPUQuerySet q), (q)) \
  V(wgpuQuerySetRelease, (WGPUQuerySet q), (q))

#define WSPEC_DECL_X(ret, name, params, args) ret w_##name params;
#define WSPEC_DECL_V(name, params, args) void w_##name params;
WSPEC_FUNCS(WSPEC_DECL_X, WSPEC_DECL_V)

// wspec_load opens the library at path (UTF-8) and resolves every function above. It returns 0
// on success; otherwise it writes the reason into err. generation receives the Dawn generation found.
int wspec_load(const char *path, char *err, size_t errlen, char *generation, size_t genlen);
int wspec_loaded(void);
// wspec_probe opens path, checks its generation and closes it again (0: usable).
int wspec_probe(const char *path, char *err, size_t errlen, char *generation, size_t genlen);

// Results that callbacks write. done becomes 1 when the callback has run.
typedef struct wspec_request {
  int done;
  uint32_t status;
  uint32_t kind;  // error type for pop-error-scope
  void *object;   // adapter or device
  char message[1024];
} wspec_request;

// Device-wide state: uncaptured errors and loss, written by spontaneous callbacks.
typedef struct wspec_device_state {
  int lost;
  uint32_t lost_reason;
  char lost_message[512];
  int error_count;
  char errors[4096];
} wspec_device_state;

WGPURequestAdapterCallbackInfo wspec_adapter_cb(wspec_request *r);
WGPURequestDeviceCallbackInfo wspec_device_cb(wspec_request *r);
WGPUBufferMapCallbackInfo wspec_map_cb(wspec_request *r);
WGPUPopErrorScopeCallbackInfo wspec_pop_cb(wspec_request *r);
WGPUQueueWorkDoneCallbackInfo wspec_done_cb(wspec_request *r);
WGPUCompilationInfoCallbackInfo wspec_compile_cb(wspec_request *r);
void wspec_device_callbacks(WGPUDeviceDescriptor *d, wspec_device_state *s);
// wspec_take_errors copies the pending uncaptured errors into out and clears them.
int wspec_take_errors(wspec_device_state *s, char *out, size_t n);
#endif
