//go:build browser

package serve

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/wspec/wspec/spec/web/webtest"
)

// browserPage calls a server from another origin the way a web page does (fetch, with the
// API key: a preflight first) and says what it got.
const browserPage = `<!doctype html><title>wspec CORS</title><script>
async function complete(base) {
  try {
    const r = await fetch(base + '/v1/completions', {method: 'POST',
      headers: {'Content-Type': 'application/json', 'Authorization': 'Bearer ` + testKey + `'},
      body: JSON.stringify({prompt: 'Once upon a time', max_tokens: 3, temperature: 0})});
    const j = await r.json();
    return 'ok ' + r.status + ' ' + JSON.stringify(j.choices[0].text) + ' id=' + r.headers.get('X-Request-Id');
  } catch (e) {
    return 'blocked ' + e.name;
  }
}
</script>`

// A page in headless Chromium, served from one origin, calls wspec serve on another: the
// server that names the page's origin in --allowed-origins answers it (the preflight passes,
// the page reads the completion and its X-Request-Id); the one with the default (no origin)
// is blocked by the browser.
func TestBrowserCORS(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, browserPage)
	}))
	defer page.Close()
	f := specServer(t)
	serverWith := func(origins []string) *httptest.Server {
		s, err := New(f.e, Config{APIKey: testKey, AllowedOrigins: origins})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		return ts
	}
	allowing, closed := serverWith([]string{page.URL}), serverWith(nil)

	ctx := webtest.Browser(t, 2*time.Minute)
	call := func(base string) string {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("complete(%q)", base), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate: %v", err)
		}
		return got
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(page.URL)); err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	a, b := call(allowing.URL), call(closed.URL)
	t.Logf("page %s: allowed server %q; server without --allowed-origins %q", page.URL, a, b)
	if !strings.HasPrefix(a, "ok 200 ") || strings.HasSuffix(a, "id=null") {
		t.Errorf("the server allowing the page's origin: %s", a)
	}
	if !strings.HasPrefix(b, "blocked ") {
		t.Errorf("the server allowing no origin: %s", b)
	}
}
