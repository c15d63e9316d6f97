package serve

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"time"
)

// afterCancelGrace is how long the handlers get, once their generations are cancelled at the
// end of a drain, to send their last bytes before the connections are closed.
const afterCancelGrace = 5 * time.Second

// Serve serves HTTP on ln until ctx is done (the serve command cancels it on SIGTERM or
// SIGINT), then drains: it keeps accepting connections but answers every new request, and
// /health, with a 503 (so a load balancer sees the drain), cuts off request bodies still
// arriving, lets the running requests finish within Config.DrainTimeout, then cancels those
// still running (their generations end within one engine step; a streamed one gets an error
// event, a whole one a 503), closes the listener and returns nil. It returns early only if ln
// fails. The caller closes the engine afterwards. Past Config.MaxConnections open connections,
// the longest idle keep-alive one is closed to make room; with none idle, a new one is
// answered 503 and closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second, // a client that never finishes its headers holds no goroutine for long
		IdleTimeout:       2 * time.Minute,
	}
	ll := newLimitListener(ln, s.cfg.MaxConnections)
	hs.ConnState = ll.connState
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ll) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return s.drain(hs, errc)
}

// drainPoll is how often a drain looks whether the running requests are done.
const drainPoll = 20 * time.Millisecond

// drain is Serve's shutdown path.
func (s *Server) drain(hs *http.Server, errc <-chan error) error {
	s.Drain()
	hs.SetKeepAlivesEnabled(false) // each open connection closes after its next reply
	t0 := time.Now()
	if !s.waitIdle(s.cfg.DrainTimeout) {
		log.Printf("serve: requests still running after %v: cancelling them", s.cfg.DrainTimeout)
		s.Cancel()
		s.waitIdle(afterCancelGrace)
	}
	sctx, cancel := context.WithTimeout(context.Background(), afterCancelGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Printf("serve: drained in %v", time.Since(t0).Round(time.Millisecond))
	return nil
}

// waitIdle waits until no request is being handled, at most d; it reports whether none is.
func (s *Server) waitIdle(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for s.active.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(drainPoll)
	}
	return true
}

// Drain makes the server refuse new requests (503), /health report 503 and the request bodies
// still arriving fail; running ones go on. Serve calls it when told to stop.
func (s *Server) Drain() {
	s.draining.Store(true)
	s.cutBodies()
}

// Cancel cancels every running generation: each ends within one engine step, its KV pages
// freed, and its client gets a 503 or, streaming, an error event.
func (s *Server) Cancel() { s.stopAll() }
