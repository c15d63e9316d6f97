package model

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/weights"
)

// shippedEagle3 is the EAGLE-3 head the repository ships for stories15M (spec/distill/recipe.sh).
var shippedEagle3 = filepath.Join("..", "..", "spec", "drafters", "stories15M", "eagle3")

// loadShippedEagle3 reads stories15M and the shipped EAGLE-3 head, and the target layers the
// head reads.
func loadShippedEagle3(b *testing.B) (*weights.LlamaWeights, *weights.Eagle, []int) {
	b.Helper()
	host, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		b.Fatalf("%v (run ./setup.sh)", err)
	}
	if _, err := os.Stat(filepath.Join(shippedEagle3, weights.ConfigFileName)); err != nil {
		b.Fatalf("no shipped EAGLE-3 head: %v", err)
	}
	w, err := weights.LoadEagle(shippedEagle3, weights.EagleKind3, nil)
	if err != nil {
		b.Fatal(err)
	}
	aux, err := w.AuxLayers(host.Cfg.NLayers)
	if err != nil {
		b.Fatal(err)
	}
	return host, w, aux
}

// BenchmarkSpecStepStories15M: where one speculative step's device time goes with the shipped
// EAGLE-3 head at k = 4: the target's verify step of 5 rows (its sampler apart), the head's
// catch-up over 3 accepted rows (which also drafts depth 1) and one draft depth (the other
// three are alike), each dispatch timed by timestamp queries, medians of 5 profiles.
func BenchmarkSpecStepStories15M(b *testing.B) {
	host, w, aux := loadShippedEagle3(b)
	m, err := New(testDevice(b), host, Options{AuxLayers: aux, FeatureSlots: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Release()
	if !m.d.HasTimestamp {
		b.Fatal("the adapter has no timestamp queries")
	}
	h, err := NewEagle(m, w)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Release()
	s := m.NewSession()
	defer s.Release()
	if s.Keep, err = m.NewSlot(); err != nil {
		b.Fatal(err)
	}
	hs, err := h.NewSeq(s.Keep)
	if err != nil {
		b.Fatal(err)
	}
	defer hs.Release()
	ctx := []int{1, 9038, 2501, 263, 931, 29892, 727, 471, 263}
	out, err := s.Forward(ctx, 0, nil, batch.Sampling{})
	if err != nil {
		b.Fatal(err)
	}
	ctx = append(ctx, out[0])
	if err := h.Draft([]EagleDraft{{Seq: hs, Ctx: ctx, K: 4}}); err != nil {
		b.Fatal(err)
	}
	local := uint32(hs.seq.Len())
	parts := []struct {
		name string
		prof func() ([]runtime.KernelTime, error)
	}{
		{"verify", func() ([]runtime.KernelTime, error) { return m.ProfileStep(s.seq, []int{100, 101, 102, 103, 104}, 4) }},
		{"catch-up", func() ([]runtime.KernelTime, error) {
			return h.catchM.Profile(&runtime.StepBlock{M: 3, Pos0: local})
		}},
		{"depth", func() ([]runtime.KernelTime, error) {
			return h.depths[0].Profile(&runtime.StepBlock{M: 1, Pos0: local + 3})
		}},
	}
	for i := 0; i < b.N; i++ {
		var sb strings.Builder
		for _, p := range parts {
			byName := map[string][]time.Duration{}
			for range 5 {
				kt, err := p.prof()
				if err != nil {
					b.Fatal(err)
				}
				sum := map[string]time.Duration{}
				for _, x := range kt {
					sum[x.Name] += x.Time
				}
				for n, t := range sum {
					byName[n] = append(byName[n], t)
				}
			}
			var names []string
			var total time.Duration
			for n := range byName {
				names = append(names, n)
				total += runtime.Median(byName[n])
			}
			sort.Slice(names, func(i, j int) bool { return runtime.Median(byName[names[i]]) > runtime.Median(byName[names[j]]) })
			fmt.Fprintf(&sb, "\n%s: %.2f ms:", p.name, ms(total))
			for _, n := range names {
				fmt.Fprintf(&sb, " %s %.2f,", n, ms(runtime.Median(byName[n])))
			}
			b.ReportMetric(ms(total), "ms("+p.name+")")
		}
		b.Log(sb.String())
	}
}

// BenchmarkKeepFeaturesStories15M: what keeping EAGLE-3's features costs a decode step that
// does not draft: stories15M plain against the same weights made with the shipped head's aux
// layers, its sequence keeping its features in a slot each step. The two take turns step by
// step (so the machine's noise weighs on both alike); it reports each one's median and the
// ratio.
func BenchmarkKeepFeaturesStories15M(b *testing.B) {
	host, _, aux := loadShippedEagle3(b)
	d := testDevice(b)
	plain, err := New(d, host, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Release()
	keep, err := New(d, host, Options{AuxLayers: aux, FeatureSlots: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer keep.Release()
	slot, err := keep.NewSlot()
	if err != nil {
		b.Fatal(err)
	}
	sessions := []*Session{plain.NewSession(), keep.NewSession()}
	sessions[1].Keep = slot
	var times [2][]time.Duration
	for i := 0; i < b.N; i++ {
		for _, s := range sessions {
			s.Truncate(0)
		}
		outs := [2][]int{{1}, {1}}
		for n := 0; n < 100; n++ {
			for j, s := range sessions {
				t0 := time.Now()
				if outs[j], err = s.Forward(outs[j][:1], 0, nil, batch.Sampling{}); err != nil {
					b.Fatal(err)
				}
				times[j] = append(times[j], time.Since(t0))
			}
		}
	}
	p, k := runtime.Median(times[0]), runtime.Median(times[1])
	b.ReportMetric(float64(p.Microseconds())/1000, "plain-ms/token")
	b.ReportMetric(float64(k.Microseconds())/1000, "keep-ms/token")
	b.ReportMetric(k.Seconds()/p.Seconds(), "keep/plain")
	b.Logf("dispatches per decode step: plain %d, keeping features %d", plain.Dispatches(), keep.Dispatches())
}
