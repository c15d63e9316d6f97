//go:build !linux && !js

package webgpu

// TrimHeap does nothing where the C heap has no malloc_trim.
func TrimHeap() {}
