package serve

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveOn runs a new server over f's engine on a loopback port with Serve; stop cancels
// Serve's context, and the returned channel gets Serve's result.
func serveOn(t *testing.T, f *fixture, drain time.Duration) (url string, stop context.CancelFunc, served <-chan error) {
	t.Helper()
	return serveWith(t, f, Config{DrainTimeout: drain})
}

// serveWith is serveOn with a Config of the test's.
func serveWith(t *testing.T, f *fixture, c Config) (url string, stop context.CancelFunc, served <-chan error) {
	t.Helper()
	s, err := New(f.e, c)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), cancel, errc
}

// startStream posts a streamed completion and returns a reader positioned after its first
// content event.
func startStream(t *testing.T, url string, maxTokens int) (*bufio.Scanner, func()) {
	t.Helper()
	body := `{"prompt": "Once upon a time", "temperature": 0, "stream": true, "max_tokens": ` + strconv.Itoa(maxTokens) + `}`
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	return sc, func() { resp.Body.Close() }
}

// rest reads the stream to its end: the events after the first.
func rest(sc *bufio.Scanner) []string {
	var out []string
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// Told to stop, Serve answers new connections' requests and /health with a 503 while it lets
// a running request finish within the bound: the stream completes, Serve returns nil, and new
// connections are refused after that.
func TestServeDrains(t *testing.T) {
	f := specServer(t)
	url, stop, served := serveOn(t, f, 30*time.Second)
	sc, closeBody := startStream(t, url, 40)
	defer closeBody()
	t0 := time.Now()
	stop()
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(5 * time.Millisecond) {
		fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := fresh.Get(url + "/health")
		if err != nil {
			t.Fatalf("a new connection while draining: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health still %d after the stop", resp.StatusCode)
		}
	}
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "a"}`))
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a completion on a new connection while draining: %v %v", err, resp)
	}
	resp.Body.Close()
	events := rest(sc)
	if len(events) < 2 || events[len(events)-1] != "[DONE]" || !strings.Contains(events[len(events)-2], `"finish_reason":"length"`) {
		t.Fatalf("the stream running at the stop ended with %q", events)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Serve did not return after its last request ended")
	}
	t.Logf("drained in %v", time.Since(t0).Round(time.Millisecond))
	if _, err := http.Get(url + "/health"); err == nil {
		t.Fatal("the server still accepts connections after Serve returned")
	}
	f.waitIdle(t)
}

// A request still running when the drain bound passes is cancelled: its stream gets an error
// event and [DONE] soon after the bound, its pages come back, and Serve returns nil.
func TestServeDrainBound(t *testing.T) {
	f := specServer(t)
	const bound = time.Millisecond // cancelled as soon as the drain begins, however fast the machine
	url, stop, served := serveOn(t, f, bound)
	sc, closeBody := startStream(t, url, 250)
	defer closeBody()
	t0 := time.Now()
	stop()
	events := rest(sc)
	took := time.Since(t0)
	if len(events) < 2 || events[len(events)-1] != "[DONE]" || !strings.Contains(events[len(events)-2], codeShuttingDown) {
		t.Fatalf("the stream cancelled by the drain ended with %q", events[max(0, len(events)-3):])
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	t.Logf("cancelled by the drain %v after the stop", took.Round(time.Millisecond))
	f.waitIdle(t)
}

// A draining server answers new requests and /health with a 503 error object.
func TestDrainRefuses(t *testing.T) {
	f := specServer(t)
	s, err := New(f.e, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	s.Drain()
	for _, path := range []string{"/health", "/v1/models"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s while draining: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "a"}`))
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("x-should-retry") != "false" {
		t.Fatalf("a completion while draining: %v %v", err, resp)
	}
	resp.Body.Close()
}
