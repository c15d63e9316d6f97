// Package runtime runs wspec's WGSL kernels on a WebGPU device: adapter choice, the pipeline
// cache, buffers and weight matrices, and recorded programs (a step's dispatches in one
// submit). The model on the device is runtime/model; the KV page pool's bookkeeping is
// runtime/kv, a step's contract runtime/batch; the pure-Go references are runtime/kernelref
// (the kernels) and runtime/ref (the model).
package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// AdapterChoice selects an adapter: "" (the first), an index ("1"), a backend ("vulkan") or
// an adapter type ("cpu", "discrete-gpu", "integrated-gpu").
type AdapterChoice string

// ErrClosed is returned by a device (and the models on it) after Close.
var ErrClosed = errors.New("device closed")

// ErrNoSuchAdapter is returned when no adapter matches an AdapterChoice.
var ErrNoSuchAdapter = errors.New("no adapter matches")

// ListAdapters returns every adapter the machine offers.
func ListAdapters() ([]*webgpu.Adapter, error) {
	in, err := webgpu.NewInstance()
	if err != nil {
		return nil, err
	}
	return in.Adapters()
}

// PickAdapter returns the adapters matching choice.
func PickAdapter(all []*webgpu.Adapter, choice AdapterChoice) ([]*webgpu.Adapter, error) {
	c := strings.ToLower(strings.TrimSpace(string(choice)))
	if c == "" || c == "all" {
		return all, nil
	}
	if i, err := strconv.Atoi(c); err == nil {
		if i < 0 || i >= len(all) {
			return nil, fmt.Errorf("%w: index %d (there are %d adapters; see `wspec devices`)", ErrNoSuchAdapter, i, len(all))
		}
		return all[i : i+1], nil
	}
	var out []*webgpu.Adapter
	for _, a := range all {
		if a.Info.BackendName == c || a.Info.TypeName == c {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %q (want an index, a backend or a type; see `wspec devices`)", ErrNoSuchAdapter, choice)
	}
	return out, nil
}

// Device is a WebGPU device with wspec's pipeline cache. It is not safe for concurrent use:
// its users serialise (the engine holds one lock per device).
type Device struct {
	*webgpu.Device
	pipelines map[string]*webgpu.ComputePipeline
	modules   map[string]*webgpu.ShaderModule
	staging   map[uint64][]*webgpu.Buffer // free map-read buffers by size (a pool for readbacks)
	sink      *webgpu.Buffer              // see Sink
	// ForceNoSubgroups makes the kernels take their paths without subgroups (tests, and
	// adapters whose subgroups misbehave).
	ForceNoSubgroups bool
	// owned: the adapter and instance OpenDevice made for this device, released by Close.
	adapter  *webgpu.Adapter
	instance *webgpu.Instance
}

// OpenDevice opens the first adapter matching choice. Close releases the device, its
// adapter and its instance.
func OpenDevice(choice AdapterChoice) (*Device, error) {
	in, err := webgpu.NewInstance()
	if err != nil {
		return nil, err
	}
	all, err := in.Adapters()
	if err != nil {
		in.Release()
		return nil, err
	}
	release := func(keep *webgpu.Adapter) {
		for _, a := range all {
			if a != keep {
				a.Release()
			}
		}
	}
	ads, err := PickAdapter(all, choice)
	if err != nil {
		release(nil)
		in.Release()
		return nil, err
	}
	d, err := NewDevice(ads[0])
	if err != nil {
		release(nil)
		in.Release()
		return nil, err
	}
	release(ads[0])
	d.adapter, d.instance = ads[0], in
	return d, nil
}

// Reclaim frees the memory of the buffers released so far: the library frees a destroyed
// buffer only once a submit made after its destruction has completed, so this submits an
// empty command buffer, waits for it and lets the library process its deferred work.
func (d *Device) Reclaim() error {
	if d.pipelines == nil {
		return ErrClosed
	}
	if err := d.NewEncoder().Submit(); err != nil {
		return err
	}
	err := d.WaitIdle()
	d.ProcessEvents()
	return err
}

// Close releases the pipeline cache, the readback buffers and the device (and the adapter
// and instance when OpenDevice made them). Every buffer made on the device must have been
// released before; the device is unusable afterwards. Closing twice is harmless.
func (d *Device) Close() {
	if d == nil || d.pipelines == nil {
		return
	}
	for _, p := range d.pipelines {
		p.Release()
	}
	for _, m := range d.modules {
		m.Release()
	}
	for _, bufs := range d.staging {
		for _, b := range bufs {
			b.Release()
		}
	}
	if d.sink != nil {
		d.sink.Release()
	}
	d.Reclaim()
	d.pipelines, d.modules, d.staging, d.sink = nil, nil, nil, nil
	d.Device.Release()
	d.adapter.Release()
	d.instance.Release()
	webgpu.TrimHeap()
}

// NewDevice opens a device on adapter a.
func NewDevice(a *webgpu.Adapter) (*Device, error) {
	d, err := a.RequestDevice()
	if err != nil {
		return nil, err
	}
	return &Device{Device: d, pipelines: map[string]*webgpu.ComputePipeline{}, modules: map[string]*webgpu.ShaderModule{},
		staging: map[uint64][]*webgpu.Buffer{}}, nil
}

// Overrides are a kernel's WGSL override constants (workgroup sizes, fusion switches).
type Overrides map[string]float64

func (o Overrides) key() string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, ",%s=%g", k, o[k])
	}
	return b.String()
}

// Pipeline returns the compute pipeline of kernel in weight type wt with overrides, compiling
// it on first use. The key is (kernel, variant, overrides): shapes never enter it.
func (d *Device) Pipeline(kernel string, wt wgsl.WeightType, o Overrides) (*webgpu.ComputePipeline, error) {
	if d.pipelines == nil {
		return nil, ErrClosed
	}
	key := kernel + "/" + wt.String() + o.key()
	if p, ok := d.pipelines[key]; ok {
		return p, nil
	}
	for _, ext := range wgsl.Enables(kernel) {
		if ext == "subgroups" && !d.HasSubgroups {
			return nil, fmt.Errorf("kernel %s needs the subgroups feature, which %s lacks", kernel, d.Adapter.Info.Name())
		}
	}
	if wt == wgsl.F16 && !d.HasF16 {
		return nil, fmt.Errorf("kernel %s: f16 weights need the shader-f16 feature, which %s lacks", kernel, d.Adapter.Info.Name())
	}
	mkey := kernel + "/" + wt.String()
	m, ok := d.modules[mkey]
	if !ok {
		src, err := wgsl.Source(kernel, wt)
		if err != nil {
			return nil, err
		}
		if m, err = d.CreateShaderModule(kernel, src); err != nil {
			return nil, err
		}
		d.modules[mkey] = m
	}
	p, err := d.CreateComputePipeline(m, key, o)
	if err != nil {
		return nil, err
	}
	d.pipelines[key] = p
	return p, nil
}

// Storage flags for buffers kernels read and write and the host fills or copies out.
const storageUsage = webgpu.UsageStorage | webgpu.UsageCopyDst | webgpu.UsageCopySrc

// NewStorage makes a storage buffer of n bytes, rounded up to whole vec4s so that kernels may
// read any buffer as array<vec4<f32>> (mat_io.wgsl's input) however many floats it holds.
func (d *Device) NewStorage(label string, n uint64) (*webgpu.Buffer, error) {
	return d.CreateBuffer(label, (n+15)&^15, storageUsage)
}

// Sink is a small writable storage buffer that stands in for a writable binding a dispatch
// does not use (a kernel's switched-off output). Dawn refuses a buffer bound writable twice,
// or writable and read-only, in one dispatch, so the read-only stand-ins cannot serve.
func (d *Device) Sink() (*webgpu.Buffer, error) {
	if d.sink == nil {
		b, err := d.NewStorage("sink", 256)
		if err != nil {
			return nil, err
		}
		d.sink = b
	}
	return d.sink, nil
}

// UploadF32 makes a storage buffer holding v.
func (d *Device) UploadF32(label string, v []float32) (*webgpu.Buffer, error) {
	b, err := d.NewStorage(label, uint64(4*len(v)))
	if err != nil {
		return nil, err
	}
	b.Write(0, F32Bytes(v))
	return b, nil
}

// UploadBytes makes a storage buffer holding raw (padded to 4 bytes).
func (d *Device) UploadBytes(label string, raw []byte) (*webgpu.Buffer, error) {
	b, err := d.NewStorage(label, uint64(len(raw)))
	if err != nil {
		return nil, err
	}
	if pad := len(raw) % 4; pad != 0 {
		raw = append(append([]byte{}, raw...), make([]byte, 4-pad)...)
	}
	b.Write(0, raw)
	return b, nil
}

// NewUniform makes a uniform buffer holding the bytes of a Params block.
func (d *Device) NewUniform(label string, raw []byte) (*webgpu.Buffer, error) {
	b, err := d.CreateBuffer(label, uint64(len(raw)), webgpu.UsageUniform|webgpu.UsageCopyDst)
	if err != nil {
		return nil, err
	}
	b.Write(0, raw)
	return b, nil
}

// ReadBuffer copies n bytes of b (at offset 0) back to the host in its own submit, through a
// map-read buffer taken from (and returned to) the device's staging pool.
func (d *Device) ReadBuffer(b *webgpu.Buffer, n uint64) ([]byte, error) {
	n = (n + 3) &^ 3
	size := uint64(256)
	for size < n {
		size *= 2
	}
	var st *webgpu.Buffer
	if free := d.staging[size]; len(free) > 0 {
		st, d.staging[size] = free[len(free)-1], free[:len(free)-1]
	} else {
		var err error
		if st, err = d.CreateBuffer("readback", size, webgpu.UsageMapRead|webgpu.UsageCopyDst); err != nil {
			return nil, err
		}
	}
	e := d.NewEncoder()
	e.Copy(b, 0, st, 0, n)
	if err := e.Submit(); err != nil {
		st.Release()
		return nil, err
	}
	out := make([]byte, n)
	if err := st.Read(0, out); err != nil {
		st.Release()
		return nil, err
	}
	d.staging[size] = append(d.staging[size], st)
	return out, nil
}

// ReadF32 reads n floats of b.
func (d *Device) ReadF32(b *webgpu.Buffer, n int) ([]float32, error) {
	raw, err := d.ReadBuffer(b, uint64(4*n))
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, nil
}

// ReadU32 reads n uint32 of b.
func (d *Device) ReadU32(b *webgpu.Buffer, n int) ([]uint32, error) {
	raw, err := d.ReadBuffer(b, uint64(4*n))
	if err != nil {
		return nil, err
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return out, nil
}

// F32Bytes is v's little-endian bytes.
func F32Bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

// U32Bytes is v's little-endian bytes.
func U32Bytes(v []uint32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], x)
	}
	return out
}
