// Package webgpu is wspec's binding to the compute subset of webgpu.h: natively, Dawn through
// cgo; in the browser (GOOS=js, the *_js.go files), navigator.gpu through syscall/js, with the
// same Go API, so everything above it compiles unchanged for both. Every failure comes back as
// a Go error.
//
// # The library
//
// Dawn is loaded at run time (dlopen, or LoadLibraryExW on Windows), so building and vetting
// need no library on the machine. The file is libwebgpu_wrapper.so on Linux,
// libwebgpu_wrapper.dylib on macOS and webgpu_wrapper.dll on Windows (LibraryFile), from the
// npm packages bun-webgpu-<os>-<arch>, which `wspec setup` fetches, checks by sha256 and
// installs into the wspec home's lib folder. FindLibrary looks, in order, at:
//
//  1. $WSPEC_WEBGPU_LIB, when set (it must exist);
//  2. on Windows, beside the executable (where Windows looks for a program's DLLs);
//  3. lib/<file> in each wspec home folder (package weights/home): $WSPEC_HOME; the user cache
//     folder's wspec (~/.cache/wspec, ~/Library/Caches/wspec, %LocalAppData%\wspec), where
//     `wspec setup` installs by default; .wspec in the working folder, where ./setup.sh
//     installs in the repository.
//
// Nothing above the working folder or the executable is searched, so a binary finds the same
// library wherever it runs; when none is found the error names every path tried.
//
// # The Dawn generation
//
// webgpu.h's enum numbers and struct layouts moved between Dawn generations, so the binding is
// written for one: the Dawn of 2025-06 that `wspec setup` pins (abi.h holds its layouts, and
// a test checks them against those measured on the pinned build). Load refuses any other generation with a clear
// error (ErrUnknownGeneration); the check is by symbol: this one exports
// wgpuGetInstanceCapabilities. The pinned builds, their sums and what has run on each OS are in
// cmd/wspec/internal/setup and docs/platforms.md.
//
// # In the browser
//
// Each wait (a readback's mapAsync, pipeline creation, onSubmittedWorkDone) is a promise
// awaited on a channel, so the page's event loop runs while the GPU works; submits and bind
// groups check their error scopes at the next wait, so a step costs no extra round trip.
package webgpu
