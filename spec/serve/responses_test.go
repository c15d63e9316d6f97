package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// responseObj is what a test reads of a response object.
type responseObj struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Status string `json:"status"`
	Output []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func (r responseObj) text() string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" {
			for _, c := range it.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// call sends a request with the API key and returns the status and body.
func (f *fixture) call(t *testing.T, method, path string) (int, []byte) {
	t.Helper()
	res := f.do(t, method, path, "", nil)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

func postResponse(t *testing.T, f *fixture, body string) responseObj {
	t.Helper()
	code, b := f.post(t, "/v1/responses", body)
	if code != 200 {
		t.Fatalf("%s: %d %s", body, code, b)
	}
	var r responseObj
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// POST /v1/responses on the default model: text whole and streamed (the same text, OpenAI's
// event sequence with rising sequence numbers), stored and read back, deleted, continued with
// previous_response_id; a forced function call, then its output sent back; refusals.
func TestResponsesAPI(t *testing.T) {
	f := toolServer(t)
	r := postResponse(t, f, `{"input": "Once upon a time", "instructions": "Tell a story.", "max_output_tokens": 12, "temperature": 0}`)
	if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || r.Status != "incomplete" || r.text() == "" ||
		r.Usage.OutputTokens != 12 || r.Usage.TotalTokens != r.Usage.InputTokens+12 {
		t.Fatalf("%+v", r)
	}
	events, _ := f.stream(t, context.Background(), "/v1/responses", `{"input": "Once upon a time", "instructions": "Tell a story.", "max_output_tokens": 12, "temperature": 0, "stream": true}`)
	var types []string
	var text strings.Builder
	var last responseObj
	for i, e := range events {
		var ev struct {
			Type     string          `json:"type"`
			Seq      *int            `json:"sequence_number"`
			Delta    string          `json:"delta"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal([]byte(e), &ev); err != nil || ev.Seq == nil || *ev.Seq != i {
			t.Fatalf("event %d: %s (%v)", i, e, err)
		}
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		if len(ev.Response) > 0 {
			json.Unmarshal(ev.Response, &last)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"}
	if len(types) < 8 || strings.Join(types[:5], " ") != strings.Join(want, " ") || types[len(types)-1] != "response.incomplete" ||
		types[len(types)-2] != "response.output_item.done" || text.String() != r.text() || last.text() != r.text() {
		t.Fatalf("events %v\nstreamed %q, whole %q, last %q", types, text.String(), r.text(), last.text())
	}

	// stored: read back, continued, deleted
	code, b := f.call(t, "GET", "/v1/responses/"+r.ID)
	var got responseObj
	if code != 200 || json.Unmarshal(b, &got) != nil || got.text() != r.text() {
		t.Fatalf("GET: %d %s", code, b)
	}
	next := postResponse(t, f, fmt.Sprintf(`{"input": "And then?", "previous_response_id": %q, "max_output_tokens": 4}`, r.ID))
	if next.Usage.InputTokens <= r.Usage.InputTokens {
		t.Errorf("a continued conversation of %d prompt tokens, the first had %d", next.Usage.InputTokens, r.Usage.InputTokens)
	}
	if code, b := f.call(t, "DELETE", "/v1/responses/"+r.ID); code != 200 || !strings.Contains(string(b), `"deleted":true`) {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	if code, _ := f.call(t, "GET", "/v1/responses/"+r.ID); code != 404 {
		t.Fatalf("GET after DELETE: %d", code)
	}

	// a forced function call, its output sent back
	tools := `"tools": [{"type": "function", "name": "get_weather", "description": "The weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"], "additionalProperties": false}}]`
	// seeded, so that the whole reply and the streamed one are the same call
	forced := `{"input": "What is the weather in Paris?", ` + tools + `, "tool_choice": {"type": "function", "name": "get_weather"}, "max_output_tokens": 200, "seed": 9, "temperature": 1`
	call := postResponse(t, f, forced+`}`)
	if len(call.Output) != 1 || call.Output[0].Type != "function_call" || call.Output[0].Name != "get_weather" || !json.Valid([]byte(call.Output[0].Arguments)) {
		t.Fatalf("forced call: %+v", call.Output)
	}
	// streamed, the arguments come in pieces as written, adding up to the whole call's
	whole := call
	evs, _ := f.stream(t, context.Background(), "/v1/responses", forced+`, "stream": true}`)
	var pieces []string
	for _, e := range evs {
		var ev struct{ Type, Delta string }
		if json.Unmarshal([]byte(e), &ev) == nil && ev.Type == "response.function_call_arguments.delta" {
			pieces = append(pieces, ev.Delta)
		}
	}
	if len(whole.Output) != 1 || len(pieces) < 3 || strings.Join(pieces, "") != whole.Output[0].Arguments {
		t.Errorf("streamed arguments %q, whole %+v", pieces, whole.Output)
	}
	follow := postResponse(t, f, fmt.Sprintf(`{"previous_response_id": %q, "input": [{"type": "function_call_output", "call_id": %q, "output": "{\"temp\": 21}"}], "max_output_tokens": 4, %s}`,
		call.ID, call.Output[0].CallID, tools))
	if follow.Status == "" || follow.Usage.InputTokens <= call.Usage.InputTokens {
		t.Fatalf("follow-up: %+v", follow)
	}

	for _, c := range []struct{ body, param string }{
		{`{"input": "hi", "tools": [{"type": "web_search"}]}`, "tools"},
		{`{"input": [{"type": "input_image", "image_url": "x"}]}`, "input"},
		{`{"input": "hi", "text": {"format": {"type": "json_schema"}}}`, "text.format.schema"},
		{`{}`, "input"},
	} {
		code, b := f.post(t, "/v1/responses", c.body)
		var e errorBody
		if code != 400 || json.Unmarshal(b, &e) != nil || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %s, want a 400 naming %s", c.body, code, b, c.param)
		}
	}
	if code, b := f.post(t, "/v1/responses", `{"input": "hi", "previous_response_id": "resp_nope"}`); code != http.StatusNotFound {
		t.Errorf("unknown previous_response_id: %d %s", code, b)
	}
}

// The store keeps at most its count and its bytes, the oldest dropped first.
func TestResponseStoreBounds(t *testing.T) {
	st := newResponseStore(3, 100)
	for i := range 5 {
		st.put(fmt.Sprint(i), storedResponse{body: []byte("0123456789")})
	}
	if _, ok := st.get("1"); ok || st.lru.Len() != 3 {
		t.Fatalf("count bound: %d kept", st.lru.Len())
	}
	st.put("big", storedResponse{body: make([]byte, 95)})
	if st.bytes > 100 || st.lru.Len() != 1 {
		t.Fatalf("bytes bound: %d bytes in %d", st.bytes, st.lru.Len())
	}
	st.put("huge", storedResponse{body: make([]byte, 101)})
	if _, ok := st.get("huge"); ok {
		t.Fatal("a response past the whole bound was kept")
	}
}
