//go:build browser

// Package webtest starts Debian's headless Chromium for the browser tests (build tag
// browser): the page tests of spec/web and the CORS test of spec/serve.
package webtest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's Chromium; CI installs it (.ci/run), elsewhere the test is skipped,
// loudly, unless CI is set.
func Chromium(t testing.TB) string {
	for _, p := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium (CI installs Debian's chromium package)")
	}
	t.Skip("SKIPPED, NOT PASSED: no Chromium on this machine (apt-get install chromium)")
	return ""
}

// Browser starts headless Chromium with a fresh profile and returns a tab's context, which
// ends after timeout; flags are more command-line switches (name, value).
func Browser(t testing.TB, timeout time.Duration, flags ...chromedp.ExecAllocatorOption) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(opts, flags...)...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return ctx
}
