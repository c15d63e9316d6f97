package model

import (
	"fmt"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// BenchmarkDecodeStories15M: greedy decode of stories15M, f32 and f16 weights. Reports
// ms/token, tokens/s, dispatches per token and the share of a token spent in per-dispatch
// overhead (timestamp queries).
func BenchmarkDecodeStories15M(b *testing.B) {
	host, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		b.Fatalf("%v (run ./setup.sh)", err)
	}
	tok, err := weights.LoadTokenizer(storiesDir)
	if err != nil {
		b.Fatal(err)
	}
	prompt := tok.Encode("Once upon a time", true)
	for _, wt := range []wgsl.WeightType{wgsl.F32, wgsl.F16} {
		b.Run(wt.String(), func(b *testing.B) {
			m, err := New(testDevice(b), host, Options{Weights: wt})
			if err != nil {
				b.Fatal(err)
			}
			var last DecodeBench
			for i := 0; i < b.N; i++ {
				if last, err = m.BenchDecode(prompt, 64); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(last.PerToken.Microseconds())/1000, "ms/token")
			b.ReportMetric(1/last.PerToken.Seconds(), "tok/s")
			b.ReportMetric(float64(last.Dispatches), "dispatches/token")
			b.ReportMetric(100*last.OverheadShare, "%overhead")
			b.Log(last)
		})
	}
}

// BenchmarkVerifyStories15M: the cost of one target step that verifies k drafts (k+1 rows)
// against a plain decode step (k = 0), which bounds what speculation can gain on an adapter.
func BenchmarkVerifyStories15M(b *testing.B) {
	host, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		b.Fatalf("%v (run ./setup.sh)", err)
	}
	m, err := New(testDevice(b), host, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s := m.NewSession()
	defer s.Release()
	if _, err := s.Forward([]int{1, 9038, 2501, 263, 931}, 0, nil, Sampling{}); err != nil {
		b.Fatal(err)
	}
	for _, k := range []int{0, 1, 2, 4, 8} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			toks := make([]int, k+1)
			for i := range toks {
				toks[i] = 100 + i
			}
			n := s.Len()
			for i := 0; i < b.N; i++ {
				if _, err := s.Forward(toks, k, nil, Sampling{}); err != nil {
					b.Fatal(err)
				}
				s.Truncate(n)
			}
		})
	}
}
