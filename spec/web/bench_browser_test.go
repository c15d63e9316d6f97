//go:build browser

package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/web/webtest"
)

// firstToken is the JS for one visit: load the default model and wait for its first token.
const firstToken = `(async () => {
	const m = await import('/wspec.js');
	const e = await m.load('/models/stories15M');
	for await (const piece of e.generate('Once upon a time', {max_tokens: 1})) break;
	await e.close();
	return true;
})()`

// BenchmarkBrowser: time to the first token of a visit, cold (a fresh browser profile: the
// wasm and the weights downloaded) and warm (the weights from the browser's cache), and decode
// speed in the page next to the native engine on this machine's adapter, alternated.
//
//	go test -tags browser -run '^$' -bench Browser -benchtime 3x ./spec/web/
func BenchmarkBrowser(b *testing.B) {
	srv := serveSite(b, nil)
	visit := func(b *testing.B, ctx context.Context) time.Duration {
		t0 := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
			b.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](firstToken, chromedp.EvalAwaitPromise)); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	b.Run("first-token-cold", func(b *testing.B) {
		var total time.Duration
		for range b.N {
			total += visit(b, webtest.Browser(b, 5*time.Minute, webgpu...))
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/first-token")
	})
	b.Run("first-token-warm", func(b *testing.B) {
		ctx := webtest.Browser(b, 10*time.Minute, webgpu...)
		visit(b, ctx) // fills the cache
		var total time.Duration
		for range b.N {
			total += visit(b, ctx)
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/first-token")
	})
	b.Run("decode", func(b *testing.B) {
		ctx := webtest.Browser(b, 20*time.Minute, webgpu...)
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
			b.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(async () => {
			const m = await import('/wspec.js'); window.bench = await m.load('/models/stories15M'); return true; })()`, chromedp.EvalAwaitPromise)); err != nil {
			b.Fatal(err)
		}
		e, err := engine.Load("", engine.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		o, _ := generateOptions(`{"max_tokens": 64, "ignore_eos": true}`)
		var page, native time.Duration
		var tokens int
		for range b.N { // alternated: the page, then the native engine
			ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(async () => {
				for await (const p of window.bench.generate('Once upon a time', {max_tokens: 64, ignore_eos: true})) {}
				return window.bench.result.decode_ms; })()`, chromedp.EvalAwaitPromise))
			if err != nil {
				b.Fatal(err)
			}
			page += time.Duration(ms * float64(time.Millisecond))
			r, err := e.Generate(context.Background(), "Once upon a time", o)
			if err != nil {
				b.Fatal(err)
			}
			native += r.Decode
			tokens += len(r.Tokens) - 1
		}
		b.ReportMetric(float64(tokens)/page.Seconds(), "page-tok/s")
		b.ReportMetric(float64(tokens)/native.Seconds(), "native-tok/s")
	})
}
