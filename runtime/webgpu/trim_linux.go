//go:build linux

package webgpu

/*
#include <malloc.h>
*/
import "C"

// TrimHeap returns the C heap's free memory to the operating system. The library and the
// Vulkan driver allocate from per-thread glibc arenas, which keep freed memory (tens of MB
// after a device with compiled pipelines is destroyed) until asked.
func TrimHeap() { C.malloc_trim(0) }
