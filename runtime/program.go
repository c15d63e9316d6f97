package runtime

import (
	"fmt"

	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// Grid gives a dispatch's workgroup counts for a step.
type Grid func(s *StepBlock) (x, y, z uint32)

// Dispatch is one recorded kernel launch: a pipeline, its bindings and its grid.
type Dispatch struct {
	Name   string
	pipe   *webgpu.ComputePipeline
	group  *webgpu.BindGroup
	params *webgpu.Buffer // the uniform Params block, owned by the dispatch
	grid   Grid
}

// KernelCall describes a dispatch to record: the kernel, its variant, its Params block and its
// data buffers (bound after Params at binding 0 and the Step block at binding 1).
type KernelCall struct {
	Kernel    string
	Label     string // what the dispatch computes, in profiles: "matmul Label" (optional)
	Weights   wgsl.WeightType
	Overrides Overrides
	Params    any
	Buffers   []webgpu.Binding
	Grid      Grid
}

// Record compiles (or finds) the pipeline, uploads the Params block and makes the bind group.
func (d *Device) Record(step *webgpu.Buffer, c KernelCall) (Dispatch, error) {
	p, err := d.Pipeline(c.Kernel, c.Weights, c.Overrides)
	if err != nil {
		return Dispatch{}, err
	}
	ub, err := d.NewUniform(c.Kernel+" params", ParamBytes(c.Params))
	if err != nil {
		return Dispatch{}, err
	}
	binds := append([]webgpu.Binding{{Buffer: ub}, {Buffer: step}}, c.Buffers...)
	g, err := d.CreateBindGroup(p, binds)
	if err != nil {
		ub.Release()
		return Dispatch{}, fmt.Errorf("kernel %s: %w", c.Kernel, err)
	}
	name := c.Kernel
	if c.Label != "" {
		name += " " + c.Label
	}
	return Dispatch{Name: name, pipe: p, group: g, params: ub, grid: c.Grid}, nil
}

// Fixed is a grid that does not depend on the step.
func Fixed(x, y, z uint32) Grid {
	return func(*StepBlock) (uint32, uint32, uint32) { return x, y, z }
}

// Program is a recorded sequence of dispatches sharing one Step block: a whole forward step
// encodes into one compute pass and one submit.
type Program struct {
	d    *Device
	Step *webgpu.Buffer
	list []Dispatch
}

// NewProgram makes an empty program with its own Step block.
func (d *Device) NewProgram() (*Program, error) {
	sb, err := d.CreateBuffer("step", uint64(len(ParamBytes(StepBlock{}))), webgpu.UsageUniform|webgpu.UsageCopyDst)
	if err != nil {
		return nil, err
	}
	return &Program{d: d, Step: sb}, nil
}

// Add records a dispatch at the end of the program.
func (p *Program) Add(c KernelCall) error {
	disp, err := p.d.Record(p.Step, c)
	if err != nil {
		return err
	}
	p.list = append(p.list, disp)
	return nil
}

// Release frees the program's Step block, Params blocks and bind groups.
func (p *Program) Release() {
	for _, d := range p.list {
		d.group.Release()
		d.params.Release()
	}
	p.list = nil
	p.Step.Release()
}

// Len is the number of dispatches.
func (p *Program) Len() int { return len(p.list) }

// Names lists the dispatches' kernel names in order.
func (p *Program) Names() []string {
	out := make([]string, len(p.list))
	for i, d := range p.list {
		out[i] = d.Name
	}
	return out
}

// Encode writes the Step block and appends every dispatch with a non-empty grid to enc, all in
// one compute pass, or one pass per dispatch with timestamps when qs is given (profiling).
// The Step block is written through the queue, before the submit: a program encoded twice in
// one submit with different blocks must use EncodeFrom.
func (p *Program) Encode(enc *webgpu.Encoder, s *StepBlock, qs *webgpu.QuerySet) {
	p.Step.Write(0, ParamBytes(*s))
	p.encode(enc, s, qs)
}

// EncodeFrom is Encode with the Step block copied, in enc's order, from src at byte offset
// off (which must hold ParamBytes(*s)): so one program can run several times in one submit
// with a different block each time (the drafters' heads, one sequence after another).
func (p *Program) EncodeFrom(enc *webgpu.Encoder, s *StepBlock, src *webgpu.Buffer, off uint64) {
	enc.Copy(src, off, p.Step, 0, StepBlockBytes)
	p.encode(enc, s, nil)
}

// StepBlockBytes is the size of a StepBlock's image.
const StepBlockBytes = 32

func (p *Program) encode(enc *webgpu.Encoder, s *StepBlock, qs *webgpu.QuerySet) {
	var pass *webgpu.Pass
	if qs == nil {
		pass = enc.BeginPass(nil, 0)
	}
	for i, disp := range p.list {
		x, y, z := disp.grid(s)
		if x == 0 || y == 0 || z == 0 {
			continue
		}
		if qs != nil {
			pass = enc.BeginPass(qs, uint32(2*i))
		}
		pass.Dispatch(disp.pipe, disp.group, x, y, z)
		if qs != nil {
			pass.End()
		}
	}
	if qs == nil {
		pass.End()
	}
}

// Run encodes the program for step s and submits it.
func (p *Program) Run(s *StepBlock) error {
	enc := p.d.NewEncoder()
	p.Encode(enc, s, nil)
	return enc.Submit()
}

// CeilDiv is a / b rounded up.
func CeilDiv(a, b uint32) uint32 { return (a + b - 1) / b }
