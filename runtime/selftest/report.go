package selftest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
)

// Report is one adapter's run of the suite, as `wspec selftest --json` writes it.
type Report struct {
	Adapter   webgpu.AdapterInfo `json:"adapter"`
	Date      time.Time          `json:"date"`
	GoOS      string             `json:"goos"`
	GoArch    string             `json:"goarch"`
	Filter    string             `json:"filter,omitempty"`
	Full      bool               `json:"full"`     // the full tier (else the quick one)
	Complete  bool               `json:"complete"` // every chosen case ran (not interrupted)
	Cases     int                `json:"cases"`
	Kernels   int                `json:"kernels"`
	Failed    int                `json:"failed"`
	Skipped   int                `json:"skipped"`
	Elapsed   time.Duration      `json:"elapsed_ns"`
	Results   []Result           `json:"results"`
	Tolerance map[string]string  `json:"tolerances"`
}

// NewReport runs the suite on d (see Run) and wraps the results with the adapter's description.
func NewReport(d *runtime.Device, o Options) Report {
	t0 := time.Now()
	res := Run(d, o)
	rep := Summarize(d.Adapter.Info, res)
	rep.Date, rep.Elapsed, rep.Filter, rep.Full = t0.UTC(), time.Since(t0), o.Filter, o.Full
	rep.Complete = o.Ctx == nil || o.Ctx.Err() == nil
	return rep
}

// KernelLine is one kernel's row of Table, for printing as soon as the kernel is done.
func KernelLine(results []Result) string {
	sum, order := summarizeKernels(results)
	if len(order) == 0 {
		return ""
	}
	return order[0] + "\t" + strings.Join(summaryCells(sum[order[0]]), "\t")
}

// Summarize builds a Report from results already run on the adapter described by info.
func Summarize(info webgpu.AdapterInfo, res []Result) Report {
	rep := Report{Adapter: info, Date: time.Now().UTC(), GoOS: goruntime.GOOS, GoArch: goruntime.GOARCH,
		Results: res, Cases: len(res), Tolerance: map[string]string{}}
	kernels := map[string]bool{}
	for _, r := range res {
		kernels[r.Kernel] = true
		switch {
		case !r.Pass:
			rep.Failed++
		case r.Skipped != "":
			rep.Skipped++
		}
	}
	rep.Kernels = len(kernels)
	for k, t := range tolerances {
		rep.Tolerance[k] = fmt.Sprintf("f32 atol %g rtol %g; f16 atol %g rtol %g", t[0].atol, t[0].rtol, t[1].atol, t[1].rtol)
	}
	rep.Tolerance["sample"] = fmt.Sprintf("tokens exact; stochastic agreement >= %g (plain), >= %g (rejection) of %d seeds",
		sampleAgreement, rejectionAgreement, seeds)
	return rep
}

// kernelSummary aggregates one kernel's cases on one adapter.
type kernelSummary struct {
	cases, failed, skipped int
	maxAbs, maxRel         float64
	minAgree               float64
	elapsed                time.Duration
}

func summarizeKernels(res []Result) (map[string]*kernelSummary, []string) {
	sum := map[string]*kernelSummary{}
	var order []string
	for _, r := range res {
		s, ok := sum[r.Kernel]
		if !ok {
			s = &kernelSummary{minAgree: 2}
			sum[r.Kernel] = s
			order = append(order, r.Kernel)
		}
		s.cases++
		if !r.Pass {
			s.failed++
		}
		if r.Skipped != "" {
			s.skipped++
		}
		s.maxAbs = math.Max(s.maxAbs, r.MaxAbsErr)
		s.maxRel = math.Max(s.maxRel, r.MaxRelErr)
		if r.Agreement > 0 {
			s.minAgree = math.Min(s.minAgree, r.Agreement)
		}
		s.elapsed += r.Elapsed
	}
	return sum, order
}

// summaryCells are a kernel's cells of a table row: cases passed, max errors, lowest
// sampling agreement, time.
func summaryCells(s *kernelSummary) []string {
	status := fmt.Sprintf("%d/%d", s.cases-s.failed, s.cases)
	if s.failed > 0 {
		status += " FAIL"
	}
	if s.skipped > 0 {
		status += fmt.Sprintf(" (%d skipped)", s.skipped)
	}
	agree := "-"
	if s.minAgree <= 1 {
		agree = fmt.Sprintf("%.2f", s.minAgree)
	}
	return []string{status, fmtErr(s.maxAbs), fmtErr(s.maxRel), agree, s.elapsed.Round(time.Millisecond).String()}
}

func fmtErr(v float64) string {
	if v >= math.MaxFloat64 {
		return "inf/NaN"
	}
	return fmt.Sprintf("%.2g", v)
}

// Table formats rep as a kernel x adapter table (cases passed, max abs/rel error, lowest
// sampling agreement, time), followed by the failing cases and their first mismatches.
func Table(rep Report) string {
	return Tables([]Report{rep})
}

// Tables formats several adapters' reports side by side: one row per kernel, one column
// group per adapter, then every failing case.
func Tables(reps []Report) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	header := []string{"kernel"}
	for _, rep := range reps {
		name := rep.Adapter.Name()
		header = append(header, name+": pass", "max abs", "max rel", "agree", "time")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	sums := make([]map[string]*kernelSummary, len(reps))
	seen := map[string]bool{}
	var kernels []string
	for i, rep := range reps {
		var order []string
		sums[i], order = summarizeKernels(rep.Results)
		for _, k := range order {
			if !seen[k] {
				seen[k] = true
				kernels = append(kernels, k)
			}
		}
	}
	for _, k := range kernels {
		row := []string{k}
		for i := range reps {
			s, ok := sums[i][k]
			if !ok {
				row = append(row, "-", "", "", "", "")
				continue
			}
			row = append(row, summaryCells(s)...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, rep := range reps {
		fmt.Fprintf(&b, "%s: %d cases (%d kernels), %d failed, %d skipped\n", rep.Adapter.Name(), rep.Cases, rep.Kernels, rep.Failed, rep.Skipped)
		var failed []Result
		for _, r := range rep.Results {
			if !r.Pass {
				failed = append(failed, r)
			}
		}
		sort.SliceStable(failed, func(i, j int) bool { return failed[i].Kernel < failed[j].Kernel })
		for _, r := range failed {
			fmt.Fprintf(&b, "  FAIL %s: max abs %s", r.Name(), fmtErr(r.MaxAbsErr))
			if r.Err != "" {
				fmt.Fprintf(&b, " (%s)", r.Err)
			}
			b.WriteString("\n")
			for _, m := range r.FirstMismatches {
				fmt.Fprintf(&b, "      %s\n", m)
			}
		}
	}
	return b.String()
}

// WriteJSON writes the reports to path as indented JSON.
func WriteJSON(path string, reports []Report) error {
	b, err := json.MarshalIndent(reports, "", "  ")
	if err != nil {
		return fmt.Errorf("selftest: %w", err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
