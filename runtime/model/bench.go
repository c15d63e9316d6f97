package model

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
)

// DecodeBench is a measured decode run.
type DecodeBench struct {
	Tokens         int                  // decode steps timed
	PerToken       time.Duration        // median wall time of one decode step (submit to token on host)
	Dispatches     int                  // dispatches per decode step
	KernelTime     time.Duration        // sum of the step's dispatch times (timestamp queries)
	EmptyDispatch  time.Duration        // median device time of one empty dispatch on this adapter
	OverheadShare  float64              // Dispatches * EmptyDispatch / PerToken
	KernelsByTotal []runtime.KernelTime // the step's device time per kernel name, largest first
}

func (b DecodeBench) String() string {
	s := fmt.Sprintf("decode: %.2f ms/token (%.1f tok/s, median of %d), %d dispatches/token, %.1f ms in kernels, empty dispatch %.0f us -> per-dispatch overhead %.0f%% of a token",
		ms(b.PerToken), 1/b.PerToken.Seconds(), b.Tokens, b.Dispatches, ms(b.KernelTime), float64(b.EmptyDispatch.Microseconds()), 100*b.OverheadShare)
	for _, k := range b.KernelsByTotal {
		s += fmt.Sprintf("\n  %-12s %8.2f ms", k.Name, ms(k.Time))
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchDecode feeds prompt, then times n greedy decode steps one by one, then profiles one step
// with timestamps and an empty-kernel program of the same length for the per-dispatch cost.
func (m *Model) BenchDecode(prompt []int, n int) (DecodeBench, error) {
	seq := m.Pool().NewSequence()
	defer seq.Release()
	out, err := m.Forward(seq, prompt, 0, nil, batch.Sampling{})
	if err != nil {
		return DecodeBench{}, err
	}
	n = min(n, m.Cfg.MaxSeq-seq.Len()-2)
	times := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if out, err = m.Forward(seq, out[:1], 0, nil, batch.Sampling{}); err != nil {
			return DecodeBench{}, err
		}
		times = append(times, time.Since(t0))
	}
	b := DecodeBench{Tokens: n, PerToken: runtime.Median(times), Dispatches: m.Dispatches()}
	if !m.d.HasTimestamp {
		return b, nil
	}
	kt, err := m.ProfileDecode(seq, out[0])
	if err != nil {
		return b, err
	}
	byName := map[string]time.Duration{}
	for _, k := range kt {
		b.KernelTime += k.Time
		byName[k.Name] += k.Time
	}
	for name, t := range byName {
		b.KernelsByTotal = append(b.KernelsByTotal, runtime.KernelTime{Name: name, Time: t})
	}
	sort.Slice(b.KernelsByTotal, func(i, j int) bool { return b.KernelsByTotal[i].Time > b.KernelsByTotal[j].Time })
	if b.EmptyDispatch, err = m.d.EmptyDispatchTime(b.Dispatches); err != nil {
		return b, err
	}
	b.OverheadShare = float64(b.Dispatches) * float64(b.EmptyDispatch) / float64(b.PerToken)
	return b, nil
}

// ProfileDecode times one decode step of token at the end of seq, dispatch by dispatch, and
// then drops it from the cache again.
func (m *Model) ProfileDecode(seq *kv.Sequence, token int) ([]runtime.KernelTime, error) {
	return m.ProfileStep(seq, []int{token}, 0)
}

// ProfileStep times one step of tokens (the last nDraft of them drafts) at the end of seq,
// dispatch by dispatch, and then drops them from the cache again.
func (m *Model) ProfileStep(seq *kv.Sequence, tokens []int, nDraft int) ([]runtime.KernelTime, error) {
	steps := []batch.SeqStep{{Seq: seq, Tokens: tokens, NDraft: nDraft, Sample: true}}
	if err := m.checkBatch(steps); err != nil {
		return nil, err
	}
	sp, err := m.prepare(steps)
	if err != nil {
		return nil, err
	}
	defer seq.Truncate(sp.before[0])
	seq.Commit(sp.before[0] + len(tokens))
	return sp.prog.Profile(&sp.step)
}

// VerifyCost is the measured cost of one target step that verifies k drafts (k+1 rows).
type VerifyCost struct {
	K     int
	Step  time.Duration // median wall time of the step, submit to tokens on the host
	Ratio float64       // Step over a plain decode step's (k = 0)
}

// BenchVerify feeds prompt, then times steps that verify k drafts for each k of ks (0, a plain
// decode step, is timed too), rounds steps of each. The ks take turns, so that a noisy machine
// weighs on all of them alike, and each step's rows are dropped from the cache again.
func (m *Model) BenchVerify(prompt []int, ks []int, rounds int) ([]VerifyCost, error) {
	if !slices.Contains(ks, 0) {
		ks = append([]int{0}, ks...)
	}
	seq := m.Pool().NewSequence()
	defer seq.Release()
	if _, err := m.Forward(seq, prompt, 0, nil, batch.Sampling{}); err != nil {
		return nil, err
	}
	n := seq.Len()
	if top := slices.Max(ks); n+top+1 > m.Cfg.MaxSeq {
		return nil, fmt.Errorf("model: verifying %d drafts after a %d-token prompt passes the context of %d", top, n, m.Cfg.MaxSeq)
	}
	times := make([][]time.Duration, len(ks))
	for range rounds {
		for j, k := range ks {
			toks := make([]int, k+1)
			for t := range toks {
				toks[t] = prompt[t%len(prompt)]
			}
			t0 := time.Now()
			if _, err := m.Forward(seq, toks, k, nil, batch.Sampling{}); err != nil {
				return nil, err
			}
			times[j] = append(times[j], time.Since(t0))
			seq.Truncate(n)
		}
	}
	out := make([]VerifyCost, len(ks))
	base := runtime.Median(times[slices.Index(ks, 0)])
	for j, k := range ks {
		med := runtime.Median(times[j])
		out[j] = VerifyCost{K: k, Step: med, Ratio: float64(med) / float64(base)}
	}
	return out, nil
}
