package runtime

import (
	"sort"
	"time"

	"github.com/wspec/wspec/runtime/webgpu"
)

// EmptyDispatchTime is the median device time of a one-invocation dispatch, from a program of
// n of them profiled with timestamps: the fixed cost every dispatch pays on this adapter.
func (d *Device) EmptyDispatchTime(n int) (time.Duration, error) {
	p, err := d.NewProgram()
	if err != nil {
		return 0, err
	}
	defer p.Release()
	src, err := d.NewStorage("empty src", 4)
	if err != nil {
		return 0, err
	}
	defer src.Release()
	dst, err := d.NewStorage("empty dst", 4)
	if err != nil {
		return 0, err
	}
	defer dst.Release()
	for i := 0; i < n; i++ {
		err := p.Add(KernelCall{Kernel: "copy_rows", Params: CopyRowsParams{Width: 1, SrcStride: 1, DstStride: 1},
			Buffers: []webgpu.Binding{{Buffer: src}, {Buffer: dst}}, Grid: Fixed(1, 1, 1)})
		if err != nil {
			return 0, err
		}
	}
	kt, err := p.Profile(&StepBlock{M: 1})
	if err != nil {
		return 0, err
	}
	ts := make([]time.Duration, len(kt))
	for i, k := range kt {
		ts[i] = k.Time
	}
	return Median(ts), nil
}

// Median is the median of ts (0 for none).
func Median(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
