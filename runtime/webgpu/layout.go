//go:build !js

package webgpu

/*
#include "layout.h"
*/
import "C"

// LayoutEntry is the compiled size or offset of one struct or field of abi.h.
type LayoutEntry struct {
	Name     string // "WGPULimits" or "WGPULimits.maxBufferSize"
	Offset   int    // field offset, or struct size
	Size     int
	IsStruct bool
}

// Layout lists what abi.h compiles to, for checking against the measured ABI.
func Layout() []LayoutEntry {
	n := int(C.wspec_layout_count())
	out := make([]LayoutEntry, n)
	for i := range out {
		e := C.wspec_layout_at(C.int(i))
		out[i] = LayoutEntry{Name: C.GoString(e.name), Offset: int(e.offset), Size: int(e.size), IsStruct: e.is_struct != 0}
	}
	return out
}
