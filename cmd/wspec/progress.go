package main

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/wspec/wspec/weights"
)

// loadBar draws a progress bar on stderr while a model's weights are read; small models
// (under 256 MiB) finish before a bar would help and get none.
func loadBar() weights.Progress {
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
		if total < 256<<20 || !stderrIsTerminal() {
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription("loading weights"), progressbar.OptionShowBytes(true),
				progressbar.OptionClearOnFinish())
		}
		bar.Set64(done)
	}
}

// stderrIsTerminal is whether stderr is a terminal: a bar redrawn into a log file is only
// noise there (a served model's log held hundreds of them).
func stderrIsTerminal() bool {
	st, err := os.Stderr.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// downloadBar draws a progress bar on stderr for each file fetched from the Hub (files under
// 1 MiB get none).
func downloadBar() func(file string, done, total int64) {
	var bar *progressbar.ProgressBar
	current := ""
	return func(file string, done, total int64) {
		if total < 1<<20 || !stderrIsTerminal() {
			return
		}
		if bar == nil || file != current {
			current = file
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription("fetching "+file), progressbar.OptionShowBytes(true),
				progressbar.OptionClearOnFinish())
		}
		bar.Set64(done)
	}
}

// compileNotice says, when a step's first run takes more than a moment, that the driver is
// compiling its kernels (seconds on a CPU adapter, once per machine: the driver caches them),
// and how long it took.
func compileNotice() func(what string) func() {
	return func(what string) func() {
		start := time.Now()
		t := time.AfterFunc(time.Second, func() {
			fmt.Fprintf(os.Stderr, "\ncompiling the kernels for %s (first use on this machine; the driver caches them) ...", what)
		})
		return func() {
			if !t.Stop() {
				fmt.Fprintf(os.Stderr, " %.1f s\n", time.Since(start).Seconds())
			}
		}
	}
}
