package model

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/wgsl"
)

// poisonKV fills every layer's K and V cache with NaN.
func poisonKV(m *Model) {
	for _, l := range m.layers {
		nan := func(size uint64) []byte {
			b := make([]byte, size)
			for i := 0; i < len(b); i += 4 {
				if m.Opts.KVType == wgsl.F16 {
					binary.LittleEndian.PutUint32(b[i:], 0x7E007E00)
				} else {
					binary.LittleEndian.PutUint32(b[i:], 0x7FC00000)
				}
			}
			return b
		}
		l.kc.Write(0, nan(l.kc.Size))
		l.vc.Write(0, nan(l.vc.Size))
	}
}

// The KV cache is never read where it was not written: a model whose caches hold NaN from the
// start decodes exactly as one whose caches are zero, for prompts that end mid-page, decoding
// across page boundaries, in f32 and f16. (A CPU adapter's device skips Dawn's lazy zeroing of
// new buffers, so fresh caches are whatever the memory held.)
func TestKVCacheNeverReadUnwritten(t *testing.T) {
	w := ref.RandomLlama(testConfigs[1], 9)
	for _, kvt := range []wgsl.WeightType{wgsl.F32, wgsl.F16} {
		t.Run(fmt.Sprint(kvt), func(t *testing.T) {
			if kvt == wgsl.F16 && !testDevice(t).HasF16 {
				t.Fatal("the test adapter has no shader-f16")
			}
			load := func() *Model {
				m, err := New(testDevice(t), w, Options{PageSize: 8, KVType: kvt})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(m.Release)
				return m
			}
			clean, poisoned := load(), load()
			poisonKV(poisoned)
			for _, prompt := range [][]int{{1, 2, 3}, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}} {
				for _, s := range []batch.Sampling{{}, {Temperature: 0.8, Seed: 4}} {
					want := decodeAlone(t, clean, prompt, 30, s)
					got := decodeAlone(t, poisoned, prompt, 30, s)
					if !slices.Equal(got, want) {
						t.Fatalf("prompt %v, %+v: the poisoned cache decodes %v, the clean one %v", prompt, s, got, want)
					}
				}
			}
			// The control: poison written positions and the next step sees it.
			sess := poisoned.NewSession()
			defer sess.Release()
			out, err := sess.Forward([]int{1, 2, 3}, 0, nil, batch.Sampling{})
			if err != nil {
				t.Fatal(err)
			}
			poisonKV(poisoned)
			if out, err = sess.Forward(out[:1], 0, nil, batch.Sampling{}); err == nil {
				t.Fatalf("a step over a NaN cache gave %v and no error", out)
			}
		})
	}
}
