package serve

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawRequest opens a connection and sends a POST's headers announcing n body bytes.
func rawRequest(t *testing.T, addr string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", n)
	return c
}

// status reads a reply's status line within d.
func status(t *testing.T, c net.Conn, d time.Duration) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no reply within %v: %v", d, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// trickle sends a byte every interval until stopped or the connection fails.
func trickle(c net.Conn, every time.Duration, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(every):
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}

// A body that trickles in slower than BodyTimeout is answered 408 once the bound passes; a
// drain cuts off a body still arriving at once (503) rather than waiting for it.
func TestBodyTimeout(t *testing.T) {
	f := specServer(t)
	url, stop, served := serveWith(t, f, Config{BodyTimeout: 400 * time.Millisecond})
	addr := strings.TrimPrefix(url, "http://")
	c := rawRequest(t, addr, 1000)
	defer c.Close()
	done := make(chan struct{})
	defer close(done)
	go trickle(c, 50*time.Millisecond, done)
	t0 := time.Now()
	if code := status(t, c, 10*time.Second); code != http.StatusRequestTimeout {
		t.Fatalf("a trickled body: %d, want 408", code)
	}
	t.Logf("trickled body cut after %v", time.Since(t0).Round(time.Millisecond))
	stop()
	<-served

	url, stop, served = serveWith(t, f, Config{BodyTimeout: time.Hour})
	c2 := rawRequest(t, strings.TrimPrefix(url, "http://"), 1000)
	defer c2.Close()
	go trickle(c2, 50*time.Millisecond, done)
	time.Sleep(200 * time.Millisecond) // the handler is reading the body
	t0 = time.Now()
	stop()
	if code := status(t, c2, 10*time.Second); code != http.StatusServiceUnavailable {
		t.Fatalf("a body arriving at the drain: %d, want 503", code)
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the drain waited for a trickled body")
	}
	t.Logf("drained %v after the stop with a body arriving", time.Since(t0).Round(time.Millisecond))
}

// Past MaxConnections open connections, a new one gets a 503 and is closed; once one closes,
// a new one is served.
func TestConnectionCap(t *testing.T) {
	f := specServer(t)
	url, stop, served := serveWith(t, f, Config{MaxConnections: 2})
	defer func() { stop(); <-served }()
	addr := strings.TrimPrefix(url, "http://")
	var open []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	time.Sleep(100 * time.Millisecond) // accepted
	c := rawRequest(t, addr, 2)
	if code := status(t, c, 5*time.Second); code != http.StatusServiceUnavailable {
		t.Fatalf("a third connection: %d, want 503", code)
	}
	c.Close()
	open[0].Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(url + "/v1/models")
		if err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		if resp != nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a connection closed: %v %v", err, resp)
		}
	}
	open[1].Close()
}

// Idle keep-alive connections do not lock clients out: with the server full of connections
// that each sent a request and went quiet, a new client is served, and the connection idle the
// longest is the one closed (512 such sockets once left every new client a 503 for the 2-minute
// idle timeout).
func TestIdleConnectionsGiveWay(t *testing.T) {
	f := specServer(t)
	url, stop, served := serveWith(t, f, Config{MaxConnections: 3})
	defer func() { stop(); <-served }()
	addr := strings.TrimPrefix(url, "http://")
	var idle []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if code := status(t, c, 5*time.Second); code != http.StatusOK {
			t.Fatalf("/health: %d", code)
		}
		idle = append(idle, c)
		time.Sleep(20 * time.Millisecond) // distinct idle times
	}
	for i := range 3 {
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(url + "/v1/models")
		if err != nil {
			t.Fatalf("new client %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("new client %d with the server full of idle connections: %d, want 200", i, resp.StatusCode)
		}
	}
	// The first, idle the longest, was closed: reading it ends.
	idle[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err == nil {
		t.Error("the connection idle the longest is still open")
	}
}

// syncBuffer is a bytes.Buffer safe for the handlers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The access log has a line per request, streamed or not, with its status, size and id.
func TestAccessLog(t *testing.T) {
	f := specServer(t)
	var log syncBuffer
	url, stop, served := serveWith(t, f, Config{AccessLog: &log})
	defer func() { stop(); <-served }()
	req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(`{"prompt": "Once", "max_tokens": 3, "stream": true}`))
	req.Header.Set("X-Request-Id", "req-42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp, err = http.Get(url + "/nowhere"); err == nil {
		resp.Body.Close()
	}
	time.Sleep(50 * time.Millisecond) // the lines are written once the handlers return
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"POST /v1/completions HTTP/1.1" 200 `+fmt.Sprint(body.Len())+"B") ||
		!strings.HasSuffix(lines[0], "request_id=req-42") || !strings.Contains(lines[1], `"GET /nowhere HTTP/1.1" 404`) {
		t.Fatalf("access log:\n%s", log.String())
	}
}

// A hostile chat template (--chat-template, or a model's own) fails the request it renders,
// with a 500 naming the template, and the server goes on serving: a recursive macro once
// ended the process with a Go stack overflow.
func TestHostileTemplateFailsRequest(t *testing.T) {
	f := specServer(t)
	url, stop, served := serveWith(t, f, Config{ChatTemplate: `{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}`})
	defer func() { stop(); <-served }()
	body := `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(b.String(), "chat template failed") {
		t.Fatalf("%d %s, want a 500 naming the chat template", resp.StatusCode, b.String())
	}
	resp, err = http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "Once", "max_tokens": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a completion after the failed chat: %d", resp.StatusCode)
	}
}
