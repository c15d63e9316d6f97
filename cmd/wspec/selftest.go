package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/selftest"
)

func runSelftest(args []string) error {
	fs := pflag.NewFlagSet("selftest", pflag.ContinueOnError)
	adapter := fs.String("adapter", "all", "adapter: all, an index, a backend or a type (see wspec devices)")
	filter := fs.String("filter", "", "run only cases whose name contains this (e.g. matmul, attention/f16)")
	jsonPath := fs.String("json", "selftest.json", "write the reports here as JSON (empty: don't)")
	quick := fs.Bool("quick", false, "the quick tier: every kernel, variant and awkward size, the fusions on the decode block only (about a third of the pipelines to compile)")
	verbose := fs.BoolP("verbose", "v", false, "print every failing case as it fails")
	if err := fs.Parse(args); err != nil {
		return err
	}
	all, err := runtime.ListAdapters()
	if err != nil {
		return err
	}
	ads, err := runtime.PickAdapter(all, runtime.AdapterChoice(*adapter))
	if err != nil {
		return err
	}
	// Ctrl-C stops between two cases: the kernels that finished are printed and written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var reports []selftest.Report
	failed := 0
	for _, a := range ads {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(os.Stderr, "selftest on %s (%s tier) ...\n", a.Info.Name(), map[bool]string{true: "quick", false: "full"}[*quick])
		d, err := runtime.NewDevice(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "  cannot open a device: %v\n", err)
			continue
		}
		tw := tabwriter.NewWriter(os.Stdout, 14, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "kernel\tpass\tmax abs\tmax rel\tagree\ttime")
		tw.Flush()
		o := selftest.Options{Filter: *filter, Full: !*quick, Ctx: ctx,
			OnKernel: func(_ string, res []selftest.Result) { // each kernel's line as it finishes
				fmt.Fprintln(tw, selftest.KernelLine(res))
				tw.Flush()
			}}
		if *verbose {
			o.Log = func(s string) { fmt.Fprintln(os.Stderr, "  "+s) }
		}
		rep := selftest.NewReport(d, o)
		failed += rep.Failed
		reports = append(reports, rep)
		d.Release()
	}
	if len(reports) > 1 {
		fmt.Print(selftest.Tables(reports))
	} else if len(reports) == 1 {
		_, rest, _ := strings.Cut(selftest.Table(reports[0]), "\n"+reports[0].Adapter.Name()+": ")
		fmt.Print(reports[0].Adapter.Name() + ": " + rest) // the summary and the failures; the rows are printed
	}
	if *jsonPath != "" {
		if err := selftest.WriteJSON(*jsonPath, reports); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s (attach it to bug reports)\n", *jsonPath)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: the kernels above finished, the report holds them")
	}
	if failed > 0 {
		return fmt.Errorf("%d cases failed", failed)
	}
	return nil
}
