package webgpu

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"
)

// Instance is the page's navigator.gpu.
type Instance struct {
	gpu js.Value
}

// NewInstance returns the page's WebGPU entry point, or an error naming what is missing.
func NewInstance() (*Instance, error) {
	nav := js.Global().Get("navigator")
	if nav.IsUndefined() || nav.Get("gpu").IsUndefined() {
		return nil, fmt.Errorf("%w: this browser has no WebGPU (navigator.gpu); Chromium needs --enable-unsafe-webgpu where WebGPU is not on by default", ErrNoAdapter)
	}
	return &Instance{gpu: nav.Get("gpu")}, nil
}

// Release does nothing: the page owns navigator.gpu.
func (in *Instance) Release() {}

// Adapters returns the page's adapter (a browser offers one per request). The first request
// after a page load sometimes answers null, so it is asked up to five times.
func (in *Instance) Adapters() ([]*Adapter, error) {
	for try := 0; try < 5; try++ {
		v, err := await(in.gpu.Call("requestAdapter", object(map[string]any{"powerPreference": "high-performance"})), "requestAdapter")
		if err != nil {
			return nil, err
		}
		if !v.IsNull() && !v.IsUndefined() {
			return []*Adapter{newAdapter(v)}, nil
		}
		time.Sleep(time.Duration(100<<try) * time.Millisecond)
	}
	return nil, fmt.Errorf("%w: navigator.gpu.requestAdapter() answered null five times", ErrNoAdapter)
}

// Adapter is the browser's GPUAdapter.
type Adapter struct {
	v    js.Value
	Info AdapterInfo
}

// wantedFeatures are the features wspec asks for when the adapter has them.
var wantedFeatures = []string{"shader-f16", "subgroups", "timestamp-query"}

func newAdapter(v js.Value) *Adapter {
	a := &Adapter{v: v}
	info := v.Get("info")
	str := func(name string) string {
		if info.IsUndefined() || info.Get(name).Type() != js.TypeString {
			return ""
		}
		return info.Get(name).String()
	}
	num := func(o js.Value, name string) uint64 {
		if o.IsUndefined() || o.Get(name).Type() != js.TypeNumber {
			return 0
		}
		return uint64(o.Get(name).Float())
	}
	a.Info = AdapterInfo{Vendor: str("vendor"), Architecture: str("architecture"), Device: str("device"),
		Description: str("description"), Backend: BackendWebGPU, BackendName: "browser",
		SubgroupMin: uint32(num(info, "subgroupMinSize")), SubgroupMax: uint32(num(info, "subgroupMaxSize"))}
	if a.Info.Device == "" && a.Info.Description == "" { // browsers may hide both
		a.Info.Description = strings.TrimSpace(a.Info.Vendor + " " + a.Info.Architecture)
	}
	// A browser names no adapter type; its fallback (software) adapters are CPUs.
	a.Info.Type = 0
	if (!info.IsUndefined() && info.Get("isFallbackAdapter").Truthy()) || strings.Contains(a.Info.Description+a.Info.Device, "SwiftShader") {
		a.Info.Type = 3
	}
	a.Info.TypeName = a.Info.Type.String()
	l := v.Get("limits")
	a.Info.Limits = Limits{
		MaxStorageBufferBindingSize:       num(l, "maxStorageBufferBindingSize"),
		MaxUniformBufferBindingSize:       num(l, "maxUniformBufferBindingSize"),
		MaxBufferSize:                     num(l, "maxBufferSize"),
		MaxStorageBuffersPerShaderStage:   uint32(num(l, "maxStorageBuffersPerShaderStage")),
		MaxBindGroups:                     uint32(num(l, "maxBindGroups")),
		MinStorageBufferOffsetAlignment:   uint32(num(l, "minStorageBufferOffsetAlignment")),
		MaxComputeWorkgroupStorageSize:    uint32(num(l, "maxComputeWorkgroupStorageSize")),
		MaxComputeInvocationsPerWorkgroup: uint32(num(l, "maxComputeInvocationsPerWorkgroup")),
		MaxComputeWorkgroupSizeX:          uint32(num(l, "maxComputeWorkgroupSizeX")),
		MaxComputeWorkgroupsPerDimension:  uint32(num(l, "maxComputeWorkgroupsPerDimension")),
	}
	each := js.FuncOf(func(_ js.Value, args []js.Value) any {
		a.Info.Features = append(a.Info.Features, args[0].String())
		return nil
	})
	v.Get("features").Call("forEach", each)
	each.Release()
	slices.Sort(a.Info.Features)
	return a
}

// Release does nothing: a GPUAdapter is garbage collected.
func (a *Adapter) Release() {}

// Device is the browser's GPUDevice with its queue. Uncaptured errors and device loss are
// recorded by JS callbacks and returned by Check, as in the native binding.
type Device struct {
	mu      sync.Mutex
	Adapter *Adapter
	v       js.Value
	queue   js.Value

	HasF16       bool // shader-f16 enabled: `enable f16;` compiles
	HasSubgroups bool // subgroups enabled: `enable subgroups;` compiles
	HasTimestamp bool // timestamp-query enabled
	Limits       Limits

	submits atomic.Uint64

	errMu    sync.Mutex
	errs     []string // uncaptured and deferred-scope errors since the last Check
	lost     string
	handlers []js.Func
}

// Submits is the number of command buffers submitted on the device so far.
func (d *Device) Submits() uint64 { return d.submits.Load() }

// RequestDevice creates a device with shader-f16, subgroups and timestamp-query where the
// adapter offers them, and the adapter's limits for the values wspec plans with.
func (a *Adapter) RequestDevice() (*Device, error) {
	d := &Device{Adapter: a}
	var feats []any
	for _, f := range wantedFeatures {
		if a.HasFeature(f) {
			feats = append(feats, f)
		}
	}
	d.HasF16, d.HasSubgroups, d.HasTimestamp = a.HasFeature("shader-f16"), a.HasFeature("subgroups"), a.HasFeature("timestamp-query")
	l := a.Info.Limits
	limits := map[string]any{
		"maxStorageBufferBindingSize":       l.MaxStorageBufferBindingSize,
		"maxBufferSize":                     l.MaxBufferSize,
		"maxStorageBuffersPerShaderStage":   l.MaxStorageBuffersPerShaderStage,
		"maxComputeWorkgroupStorageSize":    l.MaxComputeWorkgroupStorageSize,
		"maxComputeInvocationsPerWorkgroup": l.MaxComputeInvocationsPerWorkgroup,
		"maxComputeWorkgroupSizeX":          l.MaxComputeWorkgroupSizeX,
		"maxComputeWorkgroupsPerDimension":  l.MaxComputeWorkgroupsPerDimension,
	}
	v, err := await(a.v.Call("requestDevice", object(map[string]any{"requiredFeatures": feats, "requiredLimits": limits})), "requestDevice")
	if err != nil {
		return nil, err
	}
	d.v, d.queue, d.Limits = v, v.Get("queue"), l
	onErr := js.FuncOf(func(_ js.Value, args []js.Value) any {
		d.record("uncaptured: " + jsErrorString(args[0].Get("error")))
		return nil
	})
	onLost := js.FuncOf(func(_ js.Value, args []js.Value) any {
		d.errMu.Lock()
		d.lost = args[0].Get("reason").String() + ": " + jsErrorString(args[0])
		d.errMu.Unlock()
		return nil
	})
	d.handlers = append(d.handlers, onErr, onLost)
	v.Call("addEventListener", "uncapturederror", onErr)
	v.Get("lost").Call("then", onLost)
	return d, nil
}

func (d *Device) record(msg string) {
	d.errMu.Lock()
	d.errs = append(d.errs, msg)
	d.errMu.Unlock()
}

// Check returns the errors recorded since the last call, or the device loss, as one error.
func (d *Device) Check() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	if d.lost != "" {
		return fmt.Errorf("%w: %s", ErrDeviceLost, d.lost)
	}
	if len(d.errs) > 0 {
		err := fmt.Errorf("%w: %d errors: %s", ErrValidation, len(d.errs), strings.Join(d.errs, "; "))
		d.errs = nil
		return err
	}
	return nil
}

// scoped runs fn inside a validation error scope and waits for the scope's error.
func (d *Device) scoped(what string, fn func()) error {
	d.v.Call("pushErrorScope", "validation")
	fn()
	e, err := await(d.v.Call("popErrorScope"), what)
	if err != nil {
		return err
	}
	if !e.IsNull() && !e.IsUndefined() {
		return fmt.Errorf("%w: %s: %s", ErrValidation, what, jsErrorString(e))
	}
	return d.Check()
}

// deferred runs fn inside a validation error scope without waiting for it: its error, if
// any, is recorded for the next Check (every wait checks). Submits and bind groups take this
// path, so a step costs no round trip through the event loop.
func (d *Device) deferred(what string, fn func()) {
	d.v.Call("pushErrorScope", "validation")
	fn()
	var cb js.Func
	cb = js.FuncOf(func(_ js.Value, args []js.Value) any {
		if e := args[0]; !e.IsNull() && !e.IsUndefined() {
			d.record(what + ": " + jsErrorString(e))
		}
		cb.Release()
		return nil
	})
	d.v.Call("popErrorScope").Call("then", cb)
}

// WaitIdle blocks until all submitted work has finished.
func (d *Device) WaitIdle() error {
	if _, err := await(d.queue.Call("onSubmittedWorkDone"), "onSubmittedWorkDone"); err != nil {
		return err
	}
	return d.Check()
}

// Release destroys the device.
func (d *Device) Release() {
	if d == nil || d.v.IsUndefined() {
		return
	}
	d.v.Call("destroy")
	d.v = js.Undefined()
}

// Lock and Unlock serialise users of one device across goroutines.
func (d *Device) Lock()   { d.mu.Lock() }
func (d *Device) Unlock() { d.mu.Unlock() }

// ProcessEvents does nothing: the browser runs its callbacks from the event loop.
func (d *Device) ProcessEvents() {}
