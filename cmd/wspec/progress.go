package main

import (
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/wspec/wspec/weights"
)

// loadBar draws a progress bar on stderr while a model's weights are read; small models
// (under 256 MiB) finish before a bar would help and get none.
func loadBar() weights.Progress {
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
		if total < 256<<20 {
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
