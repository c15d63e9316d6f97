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
// SIGINT), then drains: it stops accepting connections and answers requests on open ones
// with a 503, lets the running requests finish within Config.DrainTimeout, then cancels those
// still running (their generations end within one engine step; a streamed one gets an error
// event, a whole one a 503) and returns nil. It returns early only if ln fails. The caller
// closes the engine afterwards.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second, // a client that never finishes its headers holds no goroutine for long
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return s.drain(hs, errc)
}

// drain is Serve's shutdown path.
func (s *Server) drain(hs *http.Server, errc <-chan error) error {
	s.Drain()
	t0 := time.Now()
	dctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		log.Printf("serve: requests still running after %v: cancelling them", s.cfg.DrainTimeout)
		s.Cancel()
		gctx, cancel := context.WithTimeout(context.Background(), afterCancelGrace)
		defer cancel()
		if err := hs.Shutdown(gctx); err != nil {
			hs.Close()
		}
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Printf("serve: drained in %v", time.Since(t0).Round(time.Millisecond))
	return nil
}

// Drain makes the server refuse new requests (503) and /health report 503; running ones go
// on. Serve calls it when told to stop.
func (s *Server) Drain() { s.draining.Store(true) }

// Cancel cancels every running generation: each ends within one engine step, its KV pages
// freed, and its client gets a 503 or, streaming, an error event.
func (s *Server) Cancel() { s.stopAll() }
