package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
)

// sseWriter streams server-sent events as OpenAI's clients read them: "data: <json>\n\n" per
// event (no comments or heartbeats: openai-go reads an empty event as bad JSON), ending with
// "data: [DONE]\n\n"; the Responses and Messages APIs' events carry their name too
// ("event: <type>"), and Anthropic's stream ends without [DONE]. Choices write from their own goroutines, so every event is written
// whole under a lock. The first failed write (the client left) cancels the request.
type sseWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	cancel func()
	err    error
}

// startSSE sends the 200 and the event-stream headers.
func startSSE(w http.ResponseWriter, cancel func()) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold the tokens back
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), cancel: cancel}
	s.flush()
	return s
}

// send writes one event holding v as JSON.
func (s *sseWriter) send(v any) {
	switch e := v.(type) {
	case event:
		s.sendEvent(e["type"].(string), e)
		return
	case multiEvent:
		for _, one := range e {
			s.sendEvent(one["type"].(string), one)
		}
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.fail(err)
		return
	}
	s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

// sendEvent writes one event with its name (the Responses API's "event: response.created").
func (s *sseWriter) sendEvent(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.fail(err)
		return
	}
	s.write(append(append([]byte("event: "+name+"\ndata: "), b...), '\n', '\n'))
}

// sendError writes an error event (openai-go ends the stream with it) and the end.
func (s *sseWriter) sendError(err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: codeInternal,
			Message: "the server failed while generating"}
	}
	s.send(ae.body())
	s.done()
}

// done writes the terminating event.
func (s *sseWriter) done() { s.write([]byte("data: [DONE]\n\n")) }

func (s *sseWriter) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.failLocked(err)
		return
	}
	s.flushLocked()
}

func (s *sseWriter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *sseWriter) flushLocked() {
	if err := s.rc.Flush(); err != nil {
		s.failLocked(err)
	}
}

func (s *sseWriter) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(err)
}

func (s *sseWriter) failLocked(err error) {
	if s.err == nil {
		s.err = err
		s.cancel()
	}
}
