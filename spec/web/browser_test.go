//go:build browser

package web

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/wspec/wspec/spec/drafters"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/web/webtest"
)

// site builds the page's engine once per test binary and serves it with the default model
// and its shipped drafters.
var site = sync.OnceValues(func() (Site, error) {
	s := Site{Drafters: map[string]string{}}
	root, err := ModuleRoot(".")
	if err != nil {
		return s, err
	}
	dir, err := os.MkdirTemp("", "wspec-web-test-")
	if err != nil {
		return s, err
	}
	if s.Wasm, s.WasmExec, err = Build(root, dir); err != nil {
		return s, err
	}
	if s.Model, err = engine.DefaultModelDir(); err != nil {
		return s, err
	}
	for _, mode := range drafters.Modes() {
		if s.Drafters[mode], err = drafters.Dir(mode); err != nil {
			return s, err
		}
	}
	return s, nil
})

// page serves the site and opens its page in headless Chromium with WebGPU.
func page(t *testing.T, timeout time.Duration) (context.Context, string) {
	s, err := site()
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx := webtest.Browser(t, timeout, chromedp.Flag("enable-unsafe-webgpu", true), chromedp.Flag("headless", "new"))
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#go:not([disabled])")); err != nil {
		t.Fatalf("the page did not get ready: %v", err)
	}
	return ctx, srv.URL
}

// evalJSON runs an async JS expression in the page and decodes its JSON result into v.
func evalJSON(t *testing.T, ctx context.Context, expr string, v any) {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => JSON.stringify(await (`+expr+`)))()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%s: %v in %s", expr, err, s)
	}
}

func TestBrowserSmoke(t *testing.T) {
	ctx, _ := page(t, 5*time.Minute)
	var got map[string]any
	t0 := time.Now()
	evalJSON(t, ctx, `(async () => { const m = await import('/wspec.js'); const e = await m.load('/models/stories15M');
		let text = ''; for await (const p of e.generate('Once upon a time', {max_tokens: 16})) text += p;
		return {text, info: e.info, result: e.result}; })()`, &got)
	t.Logf("%.1fs: %v", time.Since(t0).Seconds(), got)
}
