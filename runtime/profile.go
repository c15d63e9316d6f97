package runtime

import (
	"encoding/binary"
	"time"

	"github.com/wspec/wspec/runtime/webgpu"
)

// KernelTime is one dispatch's device time from timestamp queries.
type KernelTime struct {
	Name string
	Time time.Duration
}

// Profile runs the program for step s with each dispatch in its own timestamped pass and
// returns every dispatch's device time (the sum is above the time of the one-pass step, since
// passes add their own overhead).
func (p *Program) Profile(s *StepBlock) ([]KernelTime, error) {
	n := uint32(2 * len(p.list))
	qs, err := p.d.CreateTimestampQueries(n)
	if err != nil {
		return nil, err
	}
	defer qs.Release()
	resolve, err := p.d.CreateBuffer("timestamps", uint64(8*n), webgpu.UsageQueryResolve|webgpu.UsageCopySrc)
	if err != nil {
		return nil, err
	}
	defer resolve.Release()
	read, err := p.d.CreateBuffer("timestamps read", uint64(8*n), webgpu.UsageMapRead|webgpu.UsageCopyDst)
	if err != nil {
		return nil, err
	}
	defer read.Release()
	enc := p.d.NewEncoder()
	p.Encode(enc, s, qs)
	enc.ResolveQueries(qs, 0, n, resolve, 0)
	enc.Copy(resolve, 0, read, 0, uint64(8*n))
	if err := enc.Submit(); err != nil {
		return nil, err
	}
	raw := make([]byte, 8*n)
	if err := read.Read(0, raw); err != nil {
		return nil, err
	}
	var out []KernelTime
	for i, disp := range p.list {
		x, y, z := disp.grid(s)
		if x == 0 || y == 0 || z == 0 {
			continue
		}
		t0 := binary.LittleEndian.Uint64(raw[16*i:])
		t1 := binary.LittleEndian.Uint64(raw[16*i+8:])
		out = append(out, KernelTime{Name: disp.Name, Time: time.Duration(t1 - t0)})
	}
	return out, nil
}
