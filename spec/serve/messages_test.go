package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// anthropicMessage is what a test reads of a Messages API reply.
type anthropicMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func (m anthropicMessage) text() string {
	var b strings.Builder
	for _, c := range m.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// postAnthropic posts with Anthropic's x-api-key header (no bearer token).
func postAnthropic(t *testing.T, f *fixture, path, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.ts.URL+path, strings.NewReader(body))
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func messageOf(t *testing.T, f *fixture, body string) anthropicMessage {
	t.Helper()
	code, b := postAnthropic(t, f, "/v1/messages", body)
	var m anthropicMessage
	if code != 200 || json.Unmarshal(b, &m) != nil {
		t.Fatalf("%s: %d %s", body, code, b)
	}
	return m
}

// POST /v1/messages on the default model, authorized by x-api-key: text whole and streamed
// (Anthropic's events, the same text), stop_sequences, a forced tool_use and its tool_result
// follow-up, count_tokens, and errors in Anthropic's shape.
func TestMessagesAPI(t *testing.T) {
	f := toolServer(t)
	base := `"system": "You tell stories.", "messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0`
	m := messageOf(t, f, `{"max_tokens": 24, `+base+`}`)
	if m.Type != "message" || m.Role != "assistant" || m.StopReason != "max_tokens" || m.Usage.OutputTokens != 24 || m.text() == "" {
		t.Fatalf("%+v", m)
	}
	code, b := postAnthropic(t, f, "/v1/messages/count_tokens", `{`+base+`}`)
	if code != 200 || string(b) != `{"input_tokens":`+strconv.Itoa(m.Usage.InputTokens)+"}\n" {
		t.Errorf("count_tokens: %d %s, the message had %d", code, b, m.Usage.InputTokens)
	}

	req, _ := http.NewRequestWithContext(context.Background(), "POST", f.ts.URL+"/v1/messages", strings.NewReader(`{"max_tokens": 24, "stream": true, `+base+`}`))
	req.Header.Set("x-api-key", testKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var types []string
	var text strings.Builder
	lines := strings.Split(string(raw), "\n")
	for i, line := range lines {
		name, ok := strings.CutPrefix(line, "event: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string                                  `json:"type"`
			Delta struct{ Type, Text, StopReason string } `json:"delta"`
		}
		data, _ := strings.CutPrefix(lines[i+1], "data: ")
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Type != name {
			t.Fatalf("event %q: %s (%v)", name, data, err)
		}
		types = append(types, name)
		if ev.Delta.Type == "text_delta" {
			text.WriteString(ev.Delta.Text)
		}
	}
	if strings.Contains(string(raw), "[DONE]") || len(types) < 6 || types[0] != "message_start" || types[1] != "content_block_start" ||
		types[len(types)-3] != "content_block_stop" || types[len(types)-2] != "message_delta" || types[len(types)-1] != "message_stop" || text.String() != m.text() {
		t.Fatalf("events %v\nstreamed %q, whole %q", types, text.String(), m.text())
	}

	words := strings.Fields(m.text())
	stop := words[len(words)/2]
	s := messageOf(t, f, `{"max_tokens": 24, "stop_sequences": ["`+stop+`"], `+base+`}`)
	if s.StopReason != "stop_sequence" || s.StopSequence == nil || *s.StopSequence != stop || strings.Contains(s.text(), stop) {
		t.Errorf("stop %q: %+v", stop, s)
	}

	tools := `"tools": [{"name": "get_weather", "description": "The weather in a city", "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}]`
	// greedy, so that the whole reply and the streamed one are the same call
	forced := `{"max_tokens": 200, "temperature": 0, "messages": [{"role": "user", "content": "Weather in Paris?"}], ` + tools + `, "tool_choice": {"type": "tool", "name": "get_weather"}`
	call := messageOf(t, f, forced+`}`)
	if call.StopReason != "tool_use" || len(call.Content) != 1 || call.Content[0].Type != "tool_use" || call.Content[0].Name != "get_weather" || !json.Valid(call.Content[0].Input) {
		t.Fatalf("forced tool_use: %+v", call)
	}
	// streamed, the input's JSON comes in pieces as written, adding up to the whole call's
	whole := call
	sreq, _ := http.NewRequest("POST", f.ts.URL+"/v1/messages", strings.NewReader(forced+`, "stream": true}`))
	sreq.Header.Set("x-api-key", testKey)
	sres, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	sraw, _ := io.ReadAll(sres.Body)
	sres.Body.Close()
	var pieces []string
	for _, line := range strings.Split(string(sraw), "\n") {
		var ev struct {
			Delta struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Delta.Type == "input_json_delta" {
			pieces = append(pieces, ev.Delta.PartialJSON)
		}
	}
	if len(whole.Content) != 1 || len(pieces) < 3 || strings.Join(pieces, "") != string(whole.Content[0].Input) {
		t.Errorf("streamed input %q, whole %+v", pieces, whole.Content)
	}
	use, _ := json.Marshal(call.Content)
	follow := messageOf(t, f, `{"max_tokens": 4, `+tools+`, "messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": `+string(use)+`},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "`+call.Content[0].ID+`", "content": "21 degrees"}]}]}`)
	if follow.Usage.InputTokens <= call.Usage.InputTokens {
		t.Errorf("the tool_result follow-up: %+v", follow)
	}

	for _, c := range []struct{ body, want string }{
		{`{"messages": [{"role": "user", "content": "hi"}]}`, "max_tokens"},
		{`{"max_tokens": 4, "messages": [{"role": "robot", "content": "hi"}]}`, "robot"},
		{`{"max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}`, "image"},
		{`{"max_tokens": 4, "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "web_search_20250305", "name": "web_search"}]}`, "server tools"},
	} {
		code, b := postAnthropic(t, f, "/v1/messages", c.body)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if code != 400 || json.Unmarshal(b, &e) != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %d %s", c.body, code, b)
		}
	}
}
