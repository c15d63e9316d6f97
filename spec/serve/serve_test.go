package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/wspec/wspec/runtime/devtest"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
)

const (
	storiesDir = "../../.wspec/models/stories15M"
	model      = "stories15M"
	testKey    = "sk-test"
)

// fixture is a live server on loopback over an engine loaded on stories15M.
type fixture struct {
	e      *engine.Engine
	m      *Metrics
	s      *Server
	ts     *httptest.Server
	client openai.Client
}

var (
	fixtures   = map[string]*fixture{}
	fixturesMu sync.Mutex
)

// TestMain closes the engines the tests loaded.
func TestMain(m *testing.M) {
	devtest.SetHome()
	code := m.Run()
	for _, f := range fixtures {
		f.ts.Close()
		f.e.Close()
	}
	os.Exit(code)
}

// specServer is the tests' main server: stories15M with ngram speculation (k 4), an API key.
func specServer(t testing.TB) *fixture {
	return load(t, "ngram", engine.Options{Speculative: &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4}}, Config{APIKey: testKey,
		AllowedOrigins: []string{allowedOrigin}})
}

// allowedOrigin is the one web origin specServer lets call it.
const allowedOrigin = "http://app.example:8080"

// load starts (once per name) a server on an engine loaded with o.
func load(t testing.TB, name string, o engine.Options, c Config) *fixture {
	t.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f := fixtures[name]; f != nil {
		return f
	}
	if _, err := os.Stat(storiesDir + "/config.json"); err != nil {
		t.Fatalf("stories15M not converted (%v): run ./setup.sh", err)
	}
	k := 0
	if o.Speculative != nil {
		k = o.Speculative.NumSpeculativeTokens
	}
	f := &fixture{m: NewMetrics(model, k)}
	o.OnStep = f.m.OnStep
	var err error
	if f.e, err = engine.Load(storiesDir, o); err != nil {
		t.Fatal(err)
	}
	c.Metrics = f.m
	if f.s, err = New(f.e, c); err != nil {
		f.e.Close()
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(f.s.Handler())
	f.client = openai.NewClient(option.WithBaseURL(f.ts.URL+"/v1/"), option.WithAPIKey(c.APIKey), option.WithMaxRetries(0))
	fixtures[name] = f
	return f
}

// generate is the engine's own text for prompt (what `wspec generate` prints).
func (f *fixture) generate(t testing.TB, prompt string, o engine.GenerateOptions) *engine.Result {
	t.Helper()
	res, err := f.e.Generate(context.Background(), prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// waitIdle waits until the engine runs nothing and its page pool is empty.
func (f *fixture) waitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		st := f.e.Stats()
		if st.Running == 0 && st.Waiting == 0 && st.PagesUsed == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the engine still holds %+v", hangGuard, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hangGuard bounds the waits for what must happen eventually (a cancel seen by the engine, a
// server returning): only a hang fails it, never a slow machine.
const hangGuard = 3 * time.Minute

// post sends a raw JSON body (with the API key) and returns the status and body.
func (f *fixture) post(t testing.TB, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// stream posts a streamed request and returns its events' data (without "[DONE]") and
// whether "[DONE]" ended it.
func (f *fixture) stream(t testing.TB, ctx context.Context, path, body string) ([]string, bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	return readEvents(resp.Body)
}

// readEvents reads server-sent events up to [DONE] or the end.
func readEvents(r io.Reader) (events []string, done bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "event: ") { // the Responses API names its events
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			events = append(events, "bad line: "+line)
			continue
		}
		if data == "[DONE]" {
			return events, true
		}
		events = append(events, data)
	}
	return events, false
}

// metric reads one sample of /metrics: the line that starts with series (name and labels).
func (f *fixture) metric(t testing.TB, series string) float64 {
	t.Helper()
	resp, err := http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, series); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			if i := strings.LastIndexByte(line, ' '); i > 0 {
				var v float64
				fmt.Sscan(line[i+1:], &v)
				return v
			}
		}
	}
	t.Fatalf("/metrics has no %s", series)
	return 0
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustUnmarshal(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
}
