package webgpu

import (
	"fmt"
	"strings"
	"syscall/js"
)

// ShaderModule is compiled WGSL.
type ShaderModule struct {
	v    js.Value
	Name string
}

// CreateShaderModule compiles WGSL; errors carry the kernel name, line and column.
func (d *Device) CreateShaderModule(name, code string) (*ShaderModule, error) {
	var v js.Value
	scopeErr := d.scoped("createShaderModule "+name, func() {
		v = d.v.Call("createShaderModule", object(map[string]any{"label": name, "code": code}))
	})
	info, err := await(v.Call("getCompilationInfo"), "compilationInfo "+name)
	if err != nil {
		return nil, err
	}
	var msgs strings.Builder
	list := info.Get("messages")
	for i := 0; i < list.Length(); i++ {
		m := list.Index(i)
		if m.Get("type").String() == "error" {
			fmt.Fprintf(&msgs, "%d:%d: error: %s\n", m.Get("lineNum").Int(), m.Get("linePos").Int(), m.Get("message").String())
		}
	}
	if msgs.Len() > 0 {
		return nil, &CompileError{Kernel: name, Messages: msgs.String()}
	}
	if scopeErr != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, scopeErr)
	}
	return &ShaderModule{v: v, Name: name}, nil
}

// Release drops the module (the browser frees it when unreferenced).
func (m *ShaderModule) Release() { m.v = js.Undefined() }

// ComputePipeline is a pipeline with its group 0 layout.
type ComputePipeline struct {
	d      *Device
	v      js.Value
	layout js.Value
	Name   string
}

// CreateComputePipeline builds the pipeline for entry point "main" of m with the given
// override constants, without blocking the page (createComputePipelineAsync).
func (d *Device) CreateComputePipeline(m *ShaderModule, label string, constants map[string]float64) (*ComputePipeline, error) {
	consts := map[string]any{}
	for k, v := range constants {
		consts[k] = v
	}
	desc := object(map[string]any{"label": label, "layout": "auto",
		"compute": map[string]any{"module": m.v, "entryPoint": "main", "constants": consts}})
	v, err := await(d.v.Call("createComputePipelineAsync", desc), "createComputePipeline "+label)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", label, err)
	}
	return &ComputePipeline{d: d, v: v, layout: v.Call("getBindGroupLayout", 0), Name: label}, nil
}

// Release drops the pipeline.
func (p *ComputePipeline) Release() { p.v = js.Undefined() }

// BindGroup is a set of buffers bound to a pipeline's group 0.
type BindGroup struct {
	v js.Value
}

// CreateBindGroup binds buffers to @binding(0), @binding(1), ... of p's group 0, in order.
// Its validation error, if any, comes back at the next Check (see deferred).
func (d *Device) CreateBindGroup(p *ComputePipeline, bindings []Binding) (*BindGroup, error) {
	var entries []any
	for i, b := range bindings {
		if b.Buffer == nil {
			continue
		}
		size := b.Size
		if size == 0 {
			size = b.Buffer.Size - b.Offset
		}
		entries = append(entries, map[string]any{"binding": i,
			"resource": map[string]any{"buffer": b.Buffer.v, "offset": b.Offset, "size": size}})
	}
	var v js.Value
	d.deferred("createBindGroup "+p.Name, func() {
		v = d.v.Call("createBindGroup", object(map[string]any{"layout": p.layout, "entries": entries}))
	})
	return &BindGroup{v: v}, d.Check()
}

// Release drops the bind group.
func (g *BindGroup) Release() { g.v = js.Undefined() }
