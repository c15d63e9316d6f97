package serve

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// replier is what differs between chat and completions replies.
type replier interface {
	start(sw *sseWriter)                        // events before any text
	text(sw *sseWriter, c *choice, text string) // a choice's new text
	end(sw *sseWriter, c *choice)               // a choice's last event
	usageChunk(u usage) any                     // the usage event
	whole(choices []*choice, u usage) any       // the reply without streaming
}

// reply runs a validated request and replies, streamed or whole. A request whose client
// left gets nothing; one cut short by the server's drain gets a 503 (or an error event).
func (s *Server) reply(w http.ResponseWriter, r *http.Request, rq *request, prefix string, mk func(id string, created int64) replier) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	rp := mk(prefix+randomID(), time.Now().Unix())
	u := usage{}
	for _, p := range rq.prompts {
		u.PromptTokens += len(p.Prompt)
	}
	total := func(choices []*choice) usage {
		for _, c := range choices {
			u.CompletionTokens += len(c.res.Tokens)
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		return u
	}
	if !rq.stream {
		choices, err := s.run(ctx, rq, nil, nil)
		if err != nil {
			if err == errCancelled {
				if s.hardStop.Err() == nil {
					return // the client left: no one to answer
				}
				err = errShuttingDown
			}
			if sh, ok := rp.(errorShaper); ok {
				sh.writeError(w, err)
				return
			}
			writeError(w, err)
			return
		}
		writeJSON(w, rp.whole(choices, total(choices)))
		return
	}
	sw := startSSE(w, cancel)
	rp.start(sw)
	choices, err := s.run(ctx, rq, func(c *choice, text string) { rp.text(sw, c, text) }, func(c *choice) { rp.end(sw, c) })
	switch {
	case err == errCancelled && s.hardStop.Err() == nil:
		return
	case err == errCancelled:
		streamError(sw, rp, errShuttingDown)
	case err != nil:
		streamError(sw, rp, err)
	default:
		if rq.usage {
			sw.send(rp.usageChunk(total(choices)))
		}
		if _, ok := rp.(errorShaper); !ok {
			sw.done()
		}
	}
}

// errorShaper is a replier of an API whose errors have their own shape (Anthropic's), and
// whose streams end without OpenAI's [DONE].
type errorShaper interface {
	writeError(w http.ResponseWriter, err error)
	errorEvent(err error) any
}

func streamError(sw *sseWriter, rp replier, err error) {
	if sh, ok := rp.(errorShaper); ok {
		sw.send(sh.errorEvent(err))
		return
	}
	sw.sendError(err)
}

func randomID() string { return fmt.Sprintf("%016x%016x", rand64(), rand64()) }

func rand64() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// writeJSON replies 200 with v.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
