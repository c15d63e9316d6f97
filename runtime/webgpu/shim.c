// shim.c: the OS's library loader + function pointers + C callbacks; see shim.h.
#include "shim.h"
#include <stdio.h>
#include <string.h>

// The loader and the lock are the only OS-specific parts: LoadLibraryExW/GetProcAddress and an
// SRW lock on Windows, dlopen/dlsym and a pthread mutex elsewhere.
#ifdef _WIN32
#include <windows.h>

// lib_open loads the DLL at path (UTF-8). LOAD_WITH_ALTERED_SEARCH_PATH makes Windows look for
// the DLL's own dependencies in its folder first, as dlopen does with $ORIGIN rpaths.
static void *lib_open(const char *path, char *err, size_t errlen) {
  wchar_t wpath[4096];
  if (!MultiByteToWideChar(CP_UTF8, 0, path, -1, wpath, sizeof wpath / sizeof wpath[0])) {
    snprintf(err, errlen, "path is not valid UTF-8 or longer than 4095 characters");
    return NULL;
  }
  HMODULE h = LoadLibraryExW(wpath, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
  if (!h) {
    DWORD code = GetLastError();
    char msg[512] = "";
    FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, code, 0, msg, sizeof msg, NULL);
    for (size_t n = strlen(msg); n && (msg[n - 1] == '\r' || msg[n - 1] == '\n' || msg[n - 1] == ' '); n--) msg[n - 1] = 0;
    snprintf(err, errlen, "LoadLibrary error %lu: %s%s", (unsigned long)code, msg,
             code == ERROR_MOD_NOT_FOUND ? " (the file, or a DLL it needs, is missing: webgpu_wrapper.dll needs the Microsoft Visual C++ "
                                           "Redistributable 2015-2022, x64, for VCRUNTIME140.dll and MSVCP140.dll)" : "");
  }
  return (void *)h;
}
static void *lib_sym(void *h, const char *name) { return (void *)GetProcAddress((HMODULE)h, name); }
static void lib_close(void *h) { FreeLibrary((HMODULE)h); }

static SRWLOCK state_mu = SRWLOCK_INIT;
static void state_lock(void) { AcquireSRWLockExclusive(&state_mu); }
static void state_unlock(void) { ReleaseSRWLockExclusive(&state_mu); }
#else
#include <dlfcn.h>
#include <pthread.h>

static void *lib_open(const char *path, char *err, size_t errlen) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(err, errlen, "%s", dlerror());
  return h;
}
static void *lib_sym(void *h, const char *name) { return dlsym(h, name); }
static void lib_close(void *h) { dlclose(h); }

static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static void state_lock(void) { pthread_mutex_lock(&state_mu); }
static void state_unlock(void) { pthread_mutex_unlock(&state_mu); }
#endif

#define WSPEC_PTR_X(ret, name, params, args) static ret(*p_##name) params;
#define WSPEC_PTR_V(name, params, args) static void(*p_##name) params;
WSPEC_FUNCS(WSPEC_PTR_X, WSPEC_PTR_V)

#define WSPEC_DEF_X(ret, name, params, args) ret w_##name params { return p_##name args; }
#define WSPEC_DEF_V(name, params, args) void w_##name params { p_##name args; }
WSPEC_FUNCS(WSPEC_DEF_X, WSPEC_DEF_V)

static void *lib_handle;

int wspec_loaded(void) { return lib_handle != NULL; }

// check_generation: the struct layouts in abi.h are only right for one Dawn generation.
static int check_generation(void *h, char *err, size_t errlen, char *generation, size_t genlen) {
  int has_caps = lib_sym(h, "wgpuGetInstanceCapabilities") != NULL;
  int has_feats = lib_sym(h, "wgpuGetInstanceFeatures") != NULL;
  if (has_caps && !has_feats) {
    snprintf(generation, genlen, "dawn-2025-06 (wgpuGetInstanceCapabilities)");
    return 0;
  }
  snprintf(generation, genlen, "%s", has_feats ? "newer (wgpuGetInstanceFeatures)" : "unknown (no wgpuGetInstance* symbol)");
  snprintf(err, errlen, "unknown Dawn generation: %s; wspec is built for the Dawn of 2025-06 that exports wgpuGetInstanceCapabilities", generation);
  return 2;
}

int wspec_probe(const char *path, char *err, size_t errlen, char *generation, size_t genlen) {
  void *h = lib_open(path, err, errlen);
  if (!h) return 1;
  int rc = check_generation(h, err, errlen, generation, genlen);
  lib_close(h);
  return rc;
}

int wspec_load(const char *path, char *err, size_t errlen, char *generation, size_t genlen) {
  if (lib_handle) return 0;
  void *h = lib_open(path, err, errlen);
  if (!h) return 1;
  if (check_generation(h, err, errlen, generation, genlen)) {
    lib_close(h);
    return 2;
  }
  size_t used = 0;
  err[0] = 0;
#define WSPEC_SYM(name)                                                          \
  p_##name = lib_sym(h, #name);                                                 \
  if (!p_##name && used < errlen) used += snprintf(err + used, errlen - used, " %s", #name);
#define WSPEC_SYM_X(ret, name, params, args) WSPEC_SYM(name)
#define WSPEC_SYM_V(name, params, args) WSPEC_SYM(name)
  WSPEC_FUNCS(WSPEC_SYM_X, WSPEC_SYM_V)
  if (err[0]) {
    char missing[512];
    snprintf(missing, sizeof missing, "%s", err);
    snprintf(err, errlen, "missing symbols:%s", missing);
    lib_close(h);
    return 3;
  }
  lib_handle = h;
  return 0;
}

static void copy_view(char *dst, size_t n, WGPUStringView v) {
  size_t len = v.data ? (v.length == (size_t)-1 ? strlen(v.data) : v.length) : 0;
  if (len >= n) len = n - 1;
  if (len) memcpy(dst, v.data, len);
  dst[len] = 0;
}

static void on_adapter(uint32_t status, WGPUAdapter a, WGPUStringView msg, void *u1, void *u2) {
  wspec_request *r = u1;
  r->status = status; r->object = a; copy_view(r->message, sizeof r->message, msg); r->done = 1;
}
static void on_device(uint32_t status, WGPUDevice d, WGPUStringView msg, void *u1, void *u2) {
  wspec_request *r = u1;
  r->status = status; r->object = d; copy_view(r->message, sizeof r->message, msg); r->done = 1;
}
static void on_map(uint32_t status, WGPUStringView msg, void *u1, void *u2) {
  wspec_request *r = u1;
  r->status = status; copy_view(r->message, sizeof r->message, msg); r->done = 1;
}
static void on_pop(uint32_t status, uint32_t type, WGPUStringView msg, void *u1, void *u2) {
  wspec_request *r = u1;
  r->status = status; r->kind = type; copy_view(r->message, sizeof r->message, msg); r->done = 1;
}
static void on_done(uint32_t status, WGPUStringView msg, void *u1, void *u2) {
  wspec_request *r = u1;
  r->status = status; copy_view(r->message, sizeof r->message, msg); r->done = 1;
}
// on_compile formats the errors and warnings as "line:col: kind: message" lines.
static void on_compile(uint32_t status, const WGPUCompilationInfo *info, void *u1, void *u2) {
  wspec_request *r = u1;
  size_t used = 0;
  r->message[0] = 0;
  r->kind = 0;
  for (size_t i = 0; info && i < info->messageCount && used < sizeof r->message; i++) {
    const WGPUCompilationMessage *m = &info->messages[i];
    char text[512];
    copy_view(text, sizeof text, m->message);
    const char *kind = m->type == 1 ? "error" : m->type == 2 ? "warning" : "info";
    if (m->type == 1) r->kind++;
    used += snprintf(r->message + used, sizeof r->message - used, "%llu:%llu: %s: %s\n",
                     (unsigned long long)m->lineNum, (unsigned long long)m->linePos, kind, text);
  }
  r->status = status; r->done = 1;
}

#define WSPEC_CB(type, fn, md) \
  type c; memset(&c, 0, sizeof c); c.mode = md; c.callback = fn; c.userdata1 = r; return c;
WGPURequestAdapterCallbackInfo wspec_adapter_cb(wspec_request *r) { WSPEC_CB(WGPURequestAdapterCallbackInfo, on_adapter, WSPEC_CALLBACK_MODE_WAIT_ANY_ONLY) }
WGPURequestDeviceCallbackInfo wspec_device_cb(wspec_request *r) { WSPEC_CB(WGPURequestDeviceCallbackInfo, on_device, WSPEC_CALLBACK_MODE_WAIT_ANY_ONLY) }
WGPUBufferMapCallbackInfo wspec_map_cb(wspec_request *r) { WSPEC_CB(WGPUBufferMapCallbackInfo, on_map, WSPEC_CALLBACK_MODE_WAIT_ANY_ONLY) }
WGPUPopErrorScopeCallbackInfo wspec_pop_cb(wspec_request *r) { WSPEC_CB(WGPUPopErrorScopeCallbackInfo, on_pop, WSPEC_CALLBACK_MODE_WAIT_ANY_ONLY) }
WGPUQueueWorkDoneCallbackInfo wspec_done_cb(wspec_request *r) { WSPEC_CB(WGPUQueueWorkDoneCallbackInfo, on_done, WSPEC_CALLBACK_MODE_WAIT_ANY_ONLY) }
WGPUCompilationInfoCallbackInfo wspec_compile_cb(wspec_request *r) { WSPEC_CB(WGPUCompilationInfoCallbackInfo, on_compile, WSPEC_CALLBACK_MODE_WAIT_ANY_ONLY) }

static void on_lost(WGPUDevice const *d, uint32_t reason, WGPUStringView msg, void *u1, void *u2) {
  wspec_device_state *s = u1;
  state_lock();
  s->lost = 1; s->lost_reason = reason; copy_view(s->lost_message, sizeof s->lost_message, msg);
  state_unlock();
}
static void on_error(WGPUDevice const *d, uint32_t type, WGPUStringView msg, void *u1, void *u2) {
  wspec_device_state *s = u1;
  char text[1024];
  copy_view(text, sizeof text, msg);
  state_lock();
  size_t used = strlen(s->errors);
  if (used < sizeof s->errors - 1)
    snprintf(s->errors + used, sizeof s->errors - used, "%s%s", used ? "\n" : "", text);
  s->error_count++;
  state_unlock();
}

void wspec_device_callbacks(WGPUDeviceDescriptor *d, wspec_device_state *s) {
  d->deviceLostCallbackInfo.mode = WSPEC_CALLBACK_MODE_ALLOW_SPONTANEOUS;
  d->deviceLostCallbackInfo.callback = on_lost;
  d->deviceLostCallbackInfo.userdata1 = s;
  d->uncapturedErrorCallbackInfo.callback = on_error;
  d->uncapturedErrorCallbackInfo.userdata1 = s;
}

int wspec_take_errors(wspec_device_state *s, char *out, size_t n) {
  state_lock();
  int count = s->error_count;
  snprintf(out, n, "%s", s->errors);
  s->errors[0] = 0;
  s->error_count = 0;
  state_unlock();
  return count;
}
