package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/selftest"
)

func runSelftest(args []string) error {
	fs := pflag.NewFlagSet("selftest", pflag.ContinueOnError)
	adapter := fs.String("adapter", "all", "adapter: all, an index, a backend or a type (see `wspec devices`)")
	filter := fs.String("filter", "", "run only cases whose name contains this (e.g. matvec, attention/f16)")
	jsonPath := fs.String("json", "selftest.json", "write the reports here as JSON (empty: don't)")
	verbose := fs.BoolP("verbose", "v", false, "print every case as it runs")
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
	var reports []selftest.Report
	failed := 0
	for _, a := range ads {
		fmt.Fprintf(os.Stderr, "selftest on %s ...\n", a.Info.Name())
		d, err := runtime.NewDevice(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "  cannot open a device: %v\n", err)
			continue
		}
		log := func(string) {}
		if *verbose {
			log = func(s string) { fmt.Fprintln(os.Stderr, "  "+s) }
		}
		rep := selftest.NewReport(d, *filter, log)
		failed += rep.Failed
		reports = append(reports, rep)
		d.Release()
	}
	fmt.Print(selftest.Tables(reports))
	if *jsonPath != "" {
		if err := selftest.WriteJSON(*jsonPath, reports); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s (attach it to bug reports)\n", *jsonPath)
	}
	if failed > 0 {
		return fmt.Errorf("%d cases failed", failed)
	}
	return nil
}
