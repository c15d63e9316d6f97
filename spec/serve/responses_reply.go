package serve

import (
	"container/list"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/wspec/wspec/spec/toolcall"
)

// The Responses API's replies: a response object (output items: reasoning, a message with
// its output_text, function calls), or streamed as OpenAI's events, each with its type and
// sequence_number: response.created, response.in_progress; per item output_item.added, its
// deltas (output_text, function_call_arguments, reasoning_text), their .done, output_item.done;
// then response.completed (response.incomplete when max_output_tokens cut it).

type responsesReplier struct {
	s       *Server
	id      string
	created int64
	req     *responsesRequest
	out     *chatOutput
	conv    []json.RawMessage // the conversation before this reply, as chat messages
	store   bool

	mu        sync.Mutex
	seq       int
	items     []map[string]any // the output so far
	open      map[string]any   // the item streaming now (nil: none)
	kind      string           // its kind: message or reasoning
	buf       string           // its text so far
	finish    *choice          // the choice, once it ended
	callItems map[int]int      // call n's place in items
}

// event is one streamed event: its type goes into the SSE event line too.
type event map[string]any

func (rp *responsesReplier) emit(sw *sseWriter, typ string, fields map[string]any) {
	e := event{"type": typ, "sequence_number": rp.seq}
	rp.seq++
	for k, v := range fields {
		e[k] = v
	}
	sw.sendEvent(typ, e)
}

// response is the response object with status and the output so far.
func (rp *responsesReplier) response(status string, u *usage, incomplete bool) map[string]any {
	format := map[string]any{"type": "text"}
	if rp.req.Text != nil && rp.req.Text.Format != nil && rp.req.Text.Format.Type != "" {
		f := rp.req.Text.Format
		format = map[string]any{"type": f.Type}
		if f.Type == "json_schema" {
			format["name"], format["schema"], format["strict"] = f.Name, f.Schema, f.Strict
		}
	}
	out := rp.items
	if out == nil {
		out = []map[string]any{}
	}
	r := map[string]any{
		"id": rp.id, "object": "response", "created_at": rp.created, "status": status, "model": rp.s.name,
		"output": out, "error": nil, "incomplete_details": nil, "instructions": rp.req.Instructions,
		"max_output_tokens": rp.req.MaxOutputTokens, "parallel_tool_calls": rp.req.ParallelToolCalls == nil || *rp.req.ParallelToolCalls,
		"previous_response_id": rp.req.PreviousResponseID, "store": rp.store, "temperature": rp.req.Temperature,
		"top_p": rp.req.TopP, "text": map[string]any{"format": format}, "tool_choice": rawOr(rp.req.ToolChoice, "auto"),
		"tools": rawList(rp.req.Tools), "truncation": "disabled", "metadata": rawOr(rp.req.Metadata, map[string]any{}),
		"user": rawOr(rp.req.User, nil), "reasoning": rawOr(rp.req.Reasoning, nil),
	}
	if incomplete {
		r["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
	}
	if u != nil {
		r["usage"] = map[string]any{"input_tokens": u.PromptTokens, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": u.TotalTokens}
	}
	return r
}

func rawOr(raw json.RawMessage, def any) any {
	if len(raw) == 0 || string(raw) == "null" {
		return def
	}
	return raw
}

func rawList(raw []json.RawMessage) []json.RawMessage {
	if raw == nil {
		return []json.RawMessage{}
	}
	return raw
}

func (rp *responsesReplier) start(sw *sseWriter) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.emit(sw, "response.created", map[string]any{"response": rp.response("in_progress", nil, false)})
	rp.emit(sw, "response.in_progress", map[string]any{"response": rp.response("in_progress", nil, false)})
}

func (rp *responsesReplier) text(sw *sseWriter, _ *choice, text string) {
	thought, content, calls := rp.out.push(text)
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.add(sw, thought, content, calls)
	rp.out.writing(func(n int, name, args string) { rp.call(sw, n, name, args, false) })
}

// call streams what call n adds: its item once its name is known, its arguments as they
// grow, and when whole, their .done and the item's (sw nil: builds the item alone).
func (rp *responsesReplier) call(sw *sseWriter, n int, name, args string, whole bool) {
	_, more := rp.out.callDelta(n, args)
	if rp.callItems == nil {
		rp.callItems = map[int]int{}
	}
	idx, ok := rp.callItems[n]
	if !ok {
		rp.close(sw)
		item := map[string]any{"type": "function_call", "id": "fc_" + randomID(), "call_id": "call_" + randomID(),
			"name": name, "arguments": "", "status": "in_progress"}
		idx = len(rp.items)
		rp.items, rp.callItems[n] = append(rp.items, item), idx
		if sw != nil {
			rp.emit(sw, "response.output_item.added", map[string]any{"output_index": idx, "item": clone(item)})
		}
	}
	item := rp.items[idx]
	if more != "" && sw != nil {
		rp.emit(sw, "response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": idx, "delta": more})
	}
	item["arguments"] = args
	if !whole {
		return
	}
	item["status"] = "completed"
	if sw != nil {
		rp.emit(sw, "response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": idx, "arguments": args})
		rp.emit(sw, "response.output_item.done", map[string]any{"output_index": idx, "item": clone(item)})
	}
}

// add streams new reasoning, content and calls (sw nil: builds the items alone).
func (rp *responsesReplier) add(sw *sseWriter, thought, content string, calls []toolcall.Call) {
	if thought != "" {
		rp.delta(sw, "reasoning", thought)
	}
	if content != "" {
		rp.delta(sw, "message", content)
	}
	rp.out.done(calls, func(n int, name, args string) { rp.call(sw, n, name, args, true) })
}

// delta adds text to the open item of its kind, opening one (and closing another) first.
func (rp *responsesReplier) delta(sw *sseWriter, kind, text string) {
	if rp.open == nil || rp.kind != kind {
		rp.close(sw)
		item := map[string]any{"type": kind, "id": "msg_" + randomID(), "status": "in_progress", "role": "assistant", "content": []any{}}
		if kind == "reasoning" {
			item = map[string]any{"type": "reasoning", "id": "rs_" + randomID(), "summary": []any{}, "content": []any{}}
		}
		rp.items = append(rp.items, item)
		rp.open, rp.kind, rp.buf = item, kind, ""
		if sw != nil {
			idx := len(rp.items) - 1
			rp.emit(sw, "response.output_item.added", map[string]any{"output_index": idx, "item": clone(item)})
			if kind == "message" {
				rp.emit(sw, "response.content_part.added", map[string]any{"item_id": item["id"], "output_index": idx, "content_index": 0,
					"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			}
		}
	}
	rp.buf += text
	if sw != nil {
		idx := len(rp.items) - 1
		typ := "response.output_text.delta"
		if kind == "reasoning" {
			typ = "response.reasoning_text.delta"
		}
		rp.emit(sw, typ, map[string]any{"item_id": rp.open["id"], "output_index": idx, "content_index": 0, "delta": text})
	}
}

// close ends the open item: its text whole, its .done events.
func (rp *responsesReplier) close(sw *sseWriter) {
	if rp.open == nil {
		return
	}
	idx := len(rp.items) - 1
	id := rp.open["id"]
	if rp.kind == "message" {
		part := map[string]any{"type": "output_text", "text": rp.buf, "annotations": []any{}}
		rp.open["content"], rp.open["status"] = []any{part}, "completed"
		if sw != nil {
			rp.emit(sw, "response.output_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "text": rp.buf})
			rp.emit(sw, "response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part})
		}
	} else {
		rp.open["content"] = []any{map[string]any{"type": "reasoning_text", "text": rp.buf}}
		if sw != nil {
			rp.emit(sw, "response.reasoning_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "text": rp.buf})
		}
	}
	if sw != nil {
		rp.emit(sw, "response.output_item.done", map[string]any{"output_index": idx, "item": clone(rp.open)})
	}
	rp.open = nil
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (rp *responsesReplier) end(sw *sseWriter, ch *choice) {
	thought, content, calls := rp.out.finish()
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.add(sw, thought, content, calls)
	rp.close(sw)
	rp.finish = ch
}

// usageChunk is the stream's last event: response.completed (or .incomplete), whole.
func (rp *responsesReplier) usageChunk(u usage) any {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	status, incomplete := rp.status()
	r := rp.response(status, &u, incomplete)
	rp.keep(r)
	e := event{"type": "response." + status, "sequence_number": rp.seq, "response": r}
	rp.seq++
	return e
}

func (rp *responsesReplier) status() (string, bool) {
	if rp.finish != nil && finishReason(rp.finish.res.Finish) == "length" {
		return "incomplete", true
	}
	return "completed", false
}

func (rp *responsesReplier) whole(choices []*choice, u usage) any {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	ch := choices[0]
	t1, c1, calls := rp.out.push(ch.res.Text)
	t2, c2, rest := rp.out.finish()
	rp.add(nil, t1+t2, c1+c2, append(calls, rest...))
	rp.close(nil)
	rp.finish = ch
	status, incomplete := rp.status()
	r := rp.response(status, &u, incomplete)
	rp.keep(r)
	return r
}

// keep stores the response, and the conversation it ends, for GET and previous_response_id.
func (rp *responsesReplier) keep(r map[string]any) {
	if !rp.store {
		return
	}
	conv := append([]json.RawMessage(nil), rp.conv...)
	var calls []map[string]any
	for _, it := range rp.items {
		switch it["type"] {
		case "message":
			m, _ := json.Marshal(map[string]any{"role": "assistant", "content": it["content"].([]any)[0].(map[string]any)["text"]})
			conv = append(conv, m)
		case "function_call":
			calls = append(calls, map[string]any{"id": it["call_id"], "type": "function",
				"function": map[string]any{"name": it["name"], "arguments": it["arguments"]}})
		}
	}
	if len(calls) > 0 {
		m, _ := json.Marshal(map[string]any{"role": "assistant", "content": nil, "tool_calls": calls})
		conv = append(conv, m)
	}
	body, err := json.Marshal(r)
	if err != nil {
		return
	}
	rp.s.responses.put(rp.id, storedResponse{body: body, conv: conv})
}

// Bounds of the Responses API's store: the responses kept, and their bytes (responses and the
// conversations they end) together.
const (
	MaxStoredResponses     = 1000
	MaxStoredResponseBytes = 64 << 20
)

// storedResponse is a response kept for GET /v1/responses/{id} and previous_response_id.
type storedResponse struct {
	body []byte
	conv []json.RawMessage
}

func (r storedResponse) size() int {
	n := len(r.body)
	for _, m := range r.conv {
		n += len(m)
	}
	return n
}

// responseStore keeps the most recent responses in memory, at most maxCount and maxBytes
// (the oldest go first); nothing outlives the process.
type responseStore struct {
	mu       sync.Mutex
	lru      *list.List // of *storeEntry, most recent first
	at       map[string]*list.Element
	bytes    int
	maxCount int
	maxBytes int
}

type storeEntry struct {
	id string
	r  storedResponse
}

func newResponseStore(count, bytes int) *responseStore {
	return &responseStore{lru: list.New(), at: map[string]*list.Element{}, maxCount: count, maxBytes: bytes}
}

func (st *responseStore) put(id string, r storedResponse) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if r.size() > st.maxBytes {
		return
	}
	st.at[id] = st.lru.PushFront(&storeEntry{id, r})
	st.bytes += r.size()
	for st.lru.Len() > st.maxCount || st.bytes > st.maxBytes {
		st.drop(st.lru.Back())
	}
}

func (st *responseStore) drop(e *list.Element) {
	old := st.lru.Remove(e).(*storeEntry)
	delete(st.at, old.id)
	st.bytes -= old.r.size()
}

func (st *responseStore) get(id string) (storedResponse, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.at[id]
	if !ok {
		return storedResponse{}, false
	}
	st.lru.MoveToFront(e)
	return e.Value.(*storeEntry).r, true
}

func (st *responseStore) delete(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.at[id]
	if ok {
		st.drop(e)
	}
	return ok
}

// handleResponse is GET and DELETE /v1/responses/{id}.
func (s *Server) handleResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	notFound := &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "response_id", Code: "not_found",
		Message: "no stored response with id " + id}
	switch r.Method {
	case http.MethodGet:
		st, ok := s.responses.get(id)
		if !ok {
			writeError(w, notFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(st.body)
	case http.MethodDelete:
		if !s.responses.delete(id) {
			writeError(w, notFound)
			return
		}
		writeJSON(w, map[string]any{"id": id, "object": "response", "deleted": true})
	default:
		w.Header().Set("Allow", "GET, DELETE")
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: "method_not_allowed",
			Message: r.Method + " is not allowed here (GET, DELETE)"})
	}
}
