//go:build browser

package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/wspec/wspec/runtime/selftest"
	"github.com/wspec/wspec/spec"
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

// webgpu are Chromium's switches for WebGPU in headless mode (SwiftShader where no GPU is).
var webgpu = []chromedp.ExecAllocatorOption{chromedp.Flag("enable-unsafe-webgpu", true), chromedp.Flag("headless", "new")}

// serveSite serves the site on loopback for the test, through wrap when it is not nil.
func serveSite(t testing.TB, wrap func(http.Handler) http.Handler) *httptest.Server {
	s, err := site()
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Handler()
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// page serves the site and opens its page in headless Chromium with WebGPU.
func page(t *testing.T, timeout time.Duration) (context.Context, string) {
	srv := serveSite(t, nil)
	ctx := webtest.Browser(t, timeout, webgpu...)
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

// The portability suite's kernels in the browser against their pure-Go references: two cases
// of every kernel variant of the quick tier (its smallest and largest sizes), each compiled and
// run on the page's adapter, subgroup and workgroup paths alike. WSPEC_BROWSER_SELFTEST=quick
// runs the whole quick tier (about 2 minutes on SwiftShader), =full the full one.
func TestBrowserKernels(t *testing.T) {
	o := selftest.Options{PerVariant: 2}
	switch os.Getenv("WSPEC_BROWSER_SELFTEST") {
	case "quick":
		o.PerVariant = 0
	case "full":
		o.PerVariant, o.Full = 0, true
	}
	ctx, _ := page(t, 20*time.Minute)
	var rep selftest.Report
	evalJSON(t, ctx, fmt.Sprintf(`import('/wspec.js').then(m => m.selftest({full: %v, per_variant: %d}))`, o.Full, o.PerVariant), &rep)
	var ran []string
	for _, r := range rep.Results {
		ran = append(ran, r.Name())
		if !r.Pass {
			t.Errorf("%s: %s %v", r.Name(), r.Err, r.FirstMismatches)
		}
	}
	if want := selftest.Names(o); !slices.Equal(ran, want) {
		t.Fatalf("the page ran %d cases, the suite has %d: %v", len(ran), len(want), ran)
	}
	t.Logf("%s: %d cases of %d kernels in %.1fs, %d failed, %d skipped (%s)", rep.Adapter.Name(), rep.Cases, rep.Kernels,
		rep.Elapsed.Seconds(), rep.Failed, rep.Skipped, strings.Join(rep.Adapter.Features, " "))
	if rep.Cases-rep.Skipped < len(ran)/2 {
		t.Errorf("only %d of %d cases ran (the others skipped)", rep.Cases-rep.Skipped, rep.Cases)
	}
}

const prompt = "Once upon a time"

// run is one generation to compare: its options (the mode is native's and the page's).
type run struct {
	opts string // generate()'s options JSON
}

// native generates each run's tokens with the native engine on this machine's adapter.
func native(t *testing.T, mode string, runs []run) [][]int {
	t.Helper()
	var sc *spec.Config
	if mode != "" {
		sc = &spec.Config{Mode: mode, NumSpeculativeTokens: 4}
	}
	e, err := engine.Load("", engine.Options{Speculative: sc})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var out [][]int
	for _, r := range runs {
		o, err := generateOptions(r.opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Generate(context.Background(), prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Tokens)
	}
	return out
}

type pageResult struct {
	Text   string
	Pieces int    // TestBrowserPage's closed generation: the pieces of text it gave
	Ended  string // and how it ended
	Result struct {
		Tokens      []int
		DraftTokens int `json:"draft_tokens"`
		Accepted    int `json:"accepted_tokens"`
	}
}

// browser generates each run's tokens in the page through the JavaScript API (load,
// generate as an async iterator, close).
func browser(t *testing.T, ctx context.Context, mode string, runs []run) []pageResult {
	t.Helper()
	spec := "null"
	if mode != "" {
		spec = fmt.Sprintf(`{method: %q, num_speculative_tokens: 4}`, mode)
	}
	var list []string
	for _, r := range runs {
		list = append(list, r.opts)
	}
	var out []pageResult
	evalJSON(t, ctx, fmt.Sprintf(`(async () => {
		const m = await import('/wspec.js');
		const e = await m.load('/models/stories15M', {speculative: %s});
		const out = [];
		for (const opts of [%s]) {
			let text = '';
			for await (const piece of e.generate(%q, opts)) text += piece;
			out.push({text, result: e.result});
		}
		await e.close();
		return out;
	})()`, spec, strings.Join(list, ", "), prompt), &out)
	return out
}

// Greedy text in the page equals the native engine's, token for token, without speculation and
// with every speculative mode; so does seeded sampling (the counter-based random stream gives
// the same draws on any adapter), with and without speculation.
func TestBrowserMatchesNative(t *testing.T) {
	ctx, _ := page(t, 15*time.Minute)
	for _, mode := range []string{"", "ngram", "suffix", "draft_model", "eagle", "eagle3", "medusa"} {
		fixed := "" // with a method: drafts of k = 4 at every step, paying or not, so that every verify path runs
		if mode != "" {
			fixed = `, "speculative": {"fixed": true}`
		}
		runs := []run{{opts: `{"max_tokens": 24` + fixed + `}`}}
		if mode == "" || mode == "eagle" {
			runs = append(runs, run{opts: `{"max_tokens": 24, "temperature": 0.8, "top_p": 0.95, "seed": 7` + fixed + `}`})
		}
		want := native(t, mode, runs)
		got := browser(t, ctx, mode, runs)
		for i := range runs {
			r := got[i].Result
			if !slices.Equal(r.Tokens, want[i]) {
				t.Errorf("mode %q, %s: the page gave %v (%q), the native engine %v", mode, runs[i].opts, r.Tokens, got[i].Text, want[i])
				continue
			}
			t.Logf("mode %q, %s: %d tokens equal, %d of %d drafts accepted: %q", mode, runs[i].opts, len(r.Tokens), r.Accepted, r.DraftTokens, got[i].Text)
			if mode != "" && mode != "ngram" && mode != "suffix" && r.DraftTokens < 20 {
				t.Errorf("mode %q drafted %d tokens in the page, want k at every step", mode, r.DraftTokens)
			}
		}
	}
}

// counting serves h and counts the requests per path.
type counting struct {
	h  http.Handler
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.n[r.URL.Path]++
	c.mu.Unlock()
	c.h.ServeHTTP(w, r)
}

func (c *counting) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

// The page as a visitor uses it: pick a speculative mode, click Generate, watch the text and
// the statistics stream (a screenshot mid-generation, written to $WSPEC_SCREENSHOT when set),
// and get the native engine's tokens. A second visit takes the weights from the browser's
// cache: the server sees no second download. A folder given as File objects loads, and close()
// stops a generation still running.
func TestBrowserPage(t *testing.T) {
	var c *counting
	srv := serveSite(t, func(h http.Handler) http.Handler {
		c = &counting{h: h, n: map[string]int{}}
		return c
	})
	ctx := webtest.Browser(t, 10*time.Minute, append(webgpu, chromedp.WindowSize(1200, 760))...)
	weights := "/models/stories15M/model.safetensors"
	want := native(t, "eagle3", []run{{opts: `{"max_tokens": 96}`}})[0]

	visit := func(mode string, shot bool) pageResult {
		t.Helper()
		err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#go:not([disabled])"),
			chromedp.SetValue("#mode", mode), chromedp.SetValue("#max_tokens", "96"), chromedp.Click("#go"))
		if err != nil {
			t.Fatalf("the page: %v", err)
		}
		if shot {
			// mid-generation: some tokens out, the statistics live
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`Number(document.getElementById('tokens').textContent) >= 24`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(5*time.Minute))); err != nil {
				status, _ := chromedp.Run(ctx, chromedp.Text("#status"))
				tokens, _ := chromedp.Run(ctx, chromedp.Text("#tokens"))
				t.Fatalf("no tokens streamed: %v (status %q, tokens %q)", err, status, tokens)
			}
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil || len(png) < 10000 {
				t.Fatalf("screenshot: %d bytes, %v", len(png), err)
			}
			if p := os.Getenv("WSPEC_SCREENSHOT"); p != "" {
				if err := os.WriteFile(p, png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		var got pageResult
		evalJSON(t, ctx, `window.wspecPage.done`, &got)
		return got
	}
	got := visit("eagle3", true)
	if !slices.Equal(got.Result.Tokens, want) {
		t.Fatalf("the page gave %v (%q), the native engine %v", got.Result.Tokens, got.Text, want)
	}
	if shown, err := chromedp.Run(ctx, chromedp.Text("#out")); err != nil || !strings.HasPrefix(shown, prompt+got.Text[:20]) {
		t.Errorf("the page shows %q (%v)", shown, err)
	}
	if n := c.count(weights); n != 1 {
		t.Fatalf("first visit: the weights were fetched %d times", n)
	}
	got = visit("", false)
	if n := c.count(weights); n != 1 {
		t.Errorf("second visit: the weights were fetched again (%d requests); the browser's cache should hold them", n)
	}
	status, _ := chromedp.Run(ctx, chromedp.Text("#status"))
	t.Logf("second visit, %d tokens: %s", len(got.Result.Tokens), status)

	// A folder from the visitor's disk: load() takes File objects (here made from the served
	// files, as a drop gives them) and reads them from the page's memory.
	var dropped pageResult
	evalJSON(t, ctx, `(async () => {
		const list = await (await fetch('/models/stories15M/files.json')).json();
		const files = [];
		for (const f of list) {
			const blob = await (await fetch('/models/stories15M/' + f.name)).blob();
			files.push({path: 'stories15M/' + f.name, file: new File([blob], f.name)});
		}
		const m = await import('/wspec.js');
		const e = await m.load(files);
		let text = '';
		for await (const piece of e.generate('`+prompt+`', {max_tokens: 96})) text += piece;
		const result = e.result;
		// close() while a generation runs stops it
		let pieces = 0, ended = '';
		try {
			for await (const piece of e.generate('`+prompt+`', {max_tokens: 200, ignore_eos: true})) if (pieces++ === 0) e.close();
			ended = 'done: ' + e.result?.finish_reason;
		} catch (err) {
			ended = 'error: ' + err.message;
		}
		return {text, result, pieces, ended};
	})()`, &dropped)
	if !slices.Equal(dropped.Result.Tokens, want) {
		t.Errorf("a dropped folder gave %v, the native engine %v", dropped.Result.Tokens, want)
	}
	t.Logf("closed during a generation of 200 tokens: %d pieces of text, then %s", dropped.Pieces, dropped.Ended)
	if dropped.Pieces == 0 || dropped.Pieces > 100 {
		t.Errorf("close() during a generation: %d pieces of text (%s), want it stopped early", dropped.Pieces, dropped.Ended)
	}
}
