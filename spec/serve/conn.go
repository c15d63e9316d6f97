package serve

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config's connection limits.
const (
	DefaultMaxConnections = 512
	DefaultBodyTimeout    = 30 * time.Second
)

// limitListener answers connections past max open ones with a 503 and closes them, so that a
// flood of clients gets a clear answer and the server keeps its file descriptors. A connection
// idle between requests (keep-alive) does not hold its place against a new client: when the
// server is full, the longest idle one is closed to make room (as a client must expect of any
// idle keep-alive connection), and only when none is idle is the new one refused.
type limitListener struct {
	net.Listener
	max  int64
	open atomic.Int64

	mu   sync.Mutex
	idle map[*countedConn]time.Time // connections between requests, since when
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), idle: map[*countedConn]time.Time{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max && !l.closeIdle() {
			l.open.Add(-1)
			go refuseConn(c, l.max)
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

// connState is the http.Server's ConnState hook: it keeps the set of idle connections.
func (l *limitListener) connState(c net.Conn, s http.ConnState) {
	cc, ok := c.(*countedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s == http.StateIdle {
		l.idle[cc] = time.Now()
	} else {
		delete(l.idle, cc)
	}
}

// closeIdle closes the connection idle the longest, giving its place back; it reports whether
// there was one.
func (l *limitListener) closeIdle() bool {
	l.mu.Lock()
	var oldest *countedConn
	for c, since := range l.idle {
		if oldest == nil || since.Before(l.idle[oldest]) {
			oldest = c
		}
	}
	delete(l.idle, oldest)
	l.mu.Unlock()
	if oldest == nil {
		return false
	}
	oldest.Close()
	return true
}

// refuseConn writes a 503 with OpenAI's error object on a connection the server has no room
// for, and closes it.
func refuseConn(c net.Conn, max int64) {
	defer c.Close()
	body := fmt.Sprintf(`{"error":{"message":"too many connections (the server takes %d at once)","type":"server_error","param":null,"code":"%s"}}`,
		max, codeTooManyConnections)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// countedConn gives its place back once closed.
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// statusWriter records a reply's status and size for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog writes one line per request once it is answered: the client, the request line,
// the status, the bytes sent, the time taken and the request id (uvicorn's access log, which
// vLLM prints, with the id and the time added).
func accessLog(out io.Writer, r *http.Request, w *statusWriter, took time.Duration) {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	fmt.Fprintf(out, "%s %s - %q %d %dB %.3fs request_id=%s\n", time.Now().Format("2006-01-02T15:04:05.000Z07:00"),
		r.RemoteAddr, r.Method+" "+r.URL.RequestURI()+" "+r.Proto, status, w.bytes, took.Seconds(), w.Header().Get("X-Request-Id"))
}
