package model

import (
	"fmt"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/tokenizer"
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
	tok, err := tokenizer.Load(storiesDir)
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
// The k values take turns (k = 0, 1, 2, 4, 8, 0, ...) so that a noisy machine weighs on all of
// them alike; it reports each one's median and its ratio to k = 0's, for f32 and f16 weights.
func BenchmarkVerifyStories15M(b *testing.B) {
	host, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		b.Fatalf("%v (run ./setup.sh)", err)
	}
	for _, wt := range []wgsl.WeightType{wgsl.F32, wgsl.F16} {
		b.Run(wt.String(), func(b *testing.B) {
			m, err := New(testDevice(b), host, Options{Weights: wt})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Release()
			s := m.NewSession()
			defer s.Release()
			if _, err := s.Forward([]int{1, 9038, 2501, 263, 931}, 0, nil, batch.Sampling{}); err != nil {
				b.Fatal(err)
			}
			ks := []int{0, 1, 2, 4, 8}
			times := make([][]time.Duration, len(ks))
			n := s.Len()
			for i := 0; i < 20*b.N; i++ {
				for j, k := range ks {
					toks := make([]int, k+1)
					for t := range toks {
						toks[t] = 100 + t
					}
					t0 := time.Now()
					if _, err := s.Forward(toks, k, nil, batch.Sampling{}); err != nil {
						b.Fatal(err)
					}
					times[j] = append(times[j], time.Since(t0))
					s.Truncate(n)
				}
			}
			base := runtime.Median(times[0])
			for j, k := range ks {
				med := runtime.Median(times[j])
				b.ReportMetric(float64(med.Microseconds())/1000, fmt.Sprintf("ms/step(k=%d)", k))
				if k > 0 {
					b.ReportMetric(float64(med)/float64(base), fmt.Sprintf("x(k=%d)", k))
				}
			}
			if m.d.HasTimestamp {
				b.Log("\n" + profileSteps(b, m, s, []int{0, 4, 8}))
			}
		})
	}
}

// profileSteps is the device time per kernel of one step verifying k drafts, for each k, as a
// table (median of 5 profiles each).
func profileSteps(b *testing.B, m *Model, s *Session, ks []int) string {
	byK := make([]map[string][]time.Duration, len(ks))
	var names []string
	for j, k := range ks {
		byK[j] = map[string][]time.Duration{}
		toks := make([]int, k+1)
		for t := range toks {
			toks[t] = 100 + t
		}
		for range 5 {
			kt, err := m.ProfileStep(s.seq, toks, k)
			if err != nil {
				b.Fatal(err)
			}
			sum := map[string]time.Duration{}
			for _, x := range kt {
				sum[x.Name] += x.Time
			}
			for name, t := range sum {
				if byK[j][name] == nil && j == 0 {
					names = append(names, name)
				}
				byK[j][name] = append(byK[j][name], t)
			}
		}
	}
	out := fmt.Sprintf("%-14s", "kernel (ms)")
	for _, k := range ks {
		out += fmt.Sprintf(" %8s", fmt.Sprintf("k=%d", k))
	}
	total := make([]time.Duration, len(ks))
	for _, name := range names {
		out += fmt.Sprintf("\n%-14s", name)
		for j := range ks {
			med := runtime.Median(byK[j][name])
			total[j] += med
			out += fmt.Sprintf(" %8.2f", ms(med))
		}
	}
	out += fmt.Sprintf("\n%-14s", "total")
	for j := range ks {
		out += fmt.Sprintf(" %8.2f", ms(total[j]))
	}
	return out
}

// BenchmarkDecodeChainStories15M: a draft model drafting k tokens, stories15M drafting for
// itself: k decode steps chained on the device in one submit (DecodeChains) against k steps of
// one submit and one readback each, taking turns; medians and the ratio.
func BenchmarkDecodeChainStories15M(b *testing.B) {
	host, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		b.Fatalf("%v (run ./setup.sh)", err)
	}
	m, err := New(testDevice(b), host, Options{MaxDraft: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Release()
	s := m.NewSession()
	defer s.Release()
	if _, err := s.Forward([]int{1, 9038, 2501, 263, 931}, 0, nil, batch.Sampling{}); err != nil {
		b.Fatal(err)
	}
	n := s.Len()
	for _, k := range []int{4, 8} {
		var chained, stepped []time.Duration
		for i := 0; i < 10*b.N; i++ {
			t0 := time.Now()
			if err := m.DecodeChains([]Chain{{Seq: s.seq, Tokens: []int{29892}, K: k}}); err != nil {
				b.Fatal(err)
			}
			chained = append(chained, time.Since(t0))
			s.Truncate(n)
			t0 = time.Now()
			tok := []int{29892}
			for range k {
				out, err := s.Forward(tok, 0, nil, batch.Sampling{})
				if err != nil {
					b.Fatal(err)
				}
				tok = out[:1]
			}
			stepped = append(stepped, time.Since(t0))
			s.Truncate(n)
		}
		c, st := runtime.Median(chained), runtime.Median(stepped)
		b.ReportMetric(ms(c), fmt.Sprintf("ms/chain(k=%d)", k))
		b.ReportMetric(ms(st), fmt.Sprintf("ms/steps(k=%d)", k))
		b.ReportMetric(float64(st)/float64(c), fmt.Sprintf("x(k=%d)", k))
	}
}
