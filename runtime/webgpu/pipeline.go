//go:build !js

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

// ShaderModule is compiled WGSL.
type ShaderModule struct {
	h    C.WGPUShaderModule
	Name string
}

// CreateShaderModule compiles WGSL; errors carry the kernel name, line and column.
func (d *Device) CreateShaderModule(name, code string) (*ShaderModule, error) {
	src := (*C.WGPUShaderSourceWGSL)(C.calloc(1, C.sizeof_WGPUShaderSourceWGSL))
	defer C.free(unsafe.Pointer(src))
	desc := (*C.WGPUShaderModuleDescriptor)(C.calloc(1, C.sizeof_WGPUShaderModuleDescriptor))
	defer C.free(unsafe.Pointer(desc))
	ccode := C.CString(code)
	defer C.free(unsafe.Pointer(ccode))
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	src.chain.sType = C.WSPEC_STYPE_SHADER_SOURCE_WGSL
	src.code = stringView(ccode, len(code))
	desc.nextInChain = &src.chain
	desc.label = stringView(cname, len(name))
	var h C.WGPUShaderModule
	scopeErr := d.scoped("createShaderModule "+name, func() { h = C.w_wgpuDeviceCreateShaderModule(d.h, desc) })
	req := (*C.wspec_request)(C.calloc(1, C.sizeof_wspec_request))
	defer C.free(unsafe.Pointer(req))
	if h != nil {
		f := C.w_wgpuShaderModuleGetCompilationInfo(h, C.wspec_compile_cb(req))
		if err := d.in.wait(f, "compilationInfo "+name); err != nil {
			return nil, err
		}
	}
	if req.kind > 0 || scopeErr != nil {
		msgs := C.GoString(&req.message[0])
		if msgs == "" && scopeErr != nil {
			msgs = "0:0: error: " + scopeErr.Error()
		}
		if h != nil {
			C.w_wgpuShaderModuleRelease(h)
		}
		return nil, &CompileError{Kernel: name, Messages: msgs}
	}
	return &ShaderModule{h: h, Name: name}, nil
}

// Release frees the module.
func (m *ShaderModule) Release() {
	if m != nil && m.h != nil {
		C.w_wgpuShaderModuleRelease(m.h)
		m.h = nil
	}
}

// ComputePipeline is a compute pipeline with the layout derived from its shader.
type ComputePipeline struct {
	d      *Device
	h      C.WGPUComputePipeline
	layout C.WGPUBindGroupLayout // group 0
	Name   string
}

// CreateComputePipeline builds the pipeline for entry point "main" of m with the given
// override constants.
func (d *Device) CreateComputePipeline(m *ShaderModule, label string, constants map[string]float64) (*ComputePipeline, error) {
	keys := make([]string, 0, len(constants))
	for k := range constants {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	desc := (*C.WGPUComputePipelineDescriptor)(C.calloc(1, C.sizeof_WGPUComputePipelineDescriptor))
	defer C.free(unsafe.Pointer(desc))
	var entries *C.WGPUConstantEntry
	if len(keys) > 0 {
		entries = (*C.WGPUConstantEntry)(C.calloc(C.size_t(len(keys)), C.sizeof_WGPUConstantEntry))
		defer C.free(unsafe.Pointer(entries))
		list := unsafe.Slice(entries, len(keys))
		for i, k := range keys {
			ck := C.CString(k)
			defer C.free(unsafe.Pointer(ck))
			list[i].key = stringView(ck, len(k))
			list[i].value = C.double(constants[k])
		}
	}
	entry := C.CString("main")
	defer C.free(unsafe.Pointer(entry))
	clabel := C.CString(label)
	defer C.free(unsafe.Pointer(clabel))
	desc.label = stringView(clabel, len(label))
	desc.compute.module = m.h
	desc.compute.entryPoint = stringView(entry, 4)
	desc.compute.constantCount = C.size_t(len(keys))
	desc.compute.constants = entries
	var h C.WGPUComputePipeline
	if err := d.scoped("createComputePipeline "+label, func() { h = C.w_wgpuDeviceCreateComputePipeline(d.h, desc) }); err != nil {
		if h != nil {
			C.w_wgpuComputePipelineRelease(h)
		}
		return nil, fmt.Errorf("kernel %s: %w", label, err)
	}
	p := &ComputePipeline{d: d, h: h, Name: label}
	p.layout = C.w_wgpuComputePipelineGetBindGroupLayout(h, 0)
	return p, nil
}

// Release frees the pipeline.
func (p *ComputePipeline) Release() {
	if p != nil && p.h != nil {
		C.w_wgpuBindGroupLayoutRelease(p.layout)
		C.w_wgpuComputePipelineRelease(p.h)
		p.h = nil
	}
}

// BindGroup is a set of buffers bound to a pipeline's group 0.
type BindGroup struct {
	h C.WGPUBindGroup
}

// CreateBindGroup binds buffers to @binding(0), @binding(1), ... of p's group 0, in order.
func (d *Device) CreateBindGroup(p *ComputePipeline, bindings []Binding) (*BindGroup, error) {
	var used []int // binding i is entry i of the list; a nil Buffer is a binding the kernel lacks
	for i, b := range bindings {
		if b.Buffer != nil {
			used = append(used, i)
		}
	}
	n := len(used)
	entries := (*C.WGPUBindGroupEntry)(C.calloc(C.size_t(n+1), C.sizeof_WGPUBindGroupEntry))
	defer C.free(unsafe.Pointer(entries))
	list := unsafe.Slice(entries, n)
	for e, i := range used {
		b := bindings[i]
		size := b.Size
		if size == 0 {
			size = b.Buffer.Size - b.Offset
		}
		list[e].binding = C.uint32_t(i)
		list[e].buffer = b.Buffer.h
		list[e].offset = C.uint64_t(b.Offset)
		list[e].size = C.uint64_t(size)
	}
	desc := (*C.WGPUBindGroupDescriptor)(C.calloc(1, C.sizeof_WGPUBindGroupDescriptor))
	defer C.free(unsafe.Pointer(desc))
	desc.layout = p.layout
	desc.entryCount = C.size_t(n)
	desc.entries = entries
	var h C.WGPUBindGroup
	if err := d.scoped("createBindGroup "+p.Name, func() { h = C.w_wgpuDeviceCreateBindGroup(d.h, desc) }); err != nil {
		if h != nil {
			C.w_wgpuBindGroupRelease(h)
		}
		return nil, err
	}
	return &BindGroup{h: h}, nil
}

// Release frees the bind group.
func (g *BindGroup) Release() {
	if g != nil && g.h != nil {
		C.w_wgpuBindGroupRelease(g.h)
		g.h = nil
	}
}
