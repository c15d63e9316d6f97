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
// flood of clients gets a clear answer and the server keeps its file descriptors.
type limitListener struct {
	net.Listener
	max  int64
	open atomic.Int64
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			go refuseConn(c, l.max)
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
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
