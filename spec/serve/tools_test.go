package serve

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
)

// lockedBuffer is a strings.Builder safe for the server's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var toolWarnings lockedBuffer

// toolServer serves the default model with vLLM's hermes tool parser (auto tool choice on),
// the qwen3 reasoning parser, and warnings written to toolWarnings.
func toolServer(t testing.TB) *fixture {
	return load(t, "tools", engine.Options{Speculative: &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4}},
		Config{APIKey: testKey, ToolCallParser: "hermes", EnableAutoToolChoice: true, ReasoningParser: "qwen3", Warnings: &toolWarnings})
}

// chatResult is a chat reply's first choice, whole or put together from its stream.
type chatResult struct {
	content, reasoning *string
	calls              []toolCallOut
	finish             string
	pieces             []int // streamed: each call's argument deltas
}

// chatOnce posts a chat request and returns its first choice; streamed, it joins the deltas
// as OpenAI's clients do (a call's first delta has its index, id and name; later ones add to
// its arguments) and checks their shape.
func chatOnce(t *testing.T, f *fixture, body map[string]any, stream bool) chatResult {
	t.Helper()
	if !stream {
		code, b := f.post(t, "/v1/chat/completions", mustJSON(t, body))
		if code != 200 {
			t.Fatalf("%d %s", code, b)
		}
		var reply chatReply
		if err := json.Unmarshal(b, &reply); err != nil {
			t.Fatal(err)
		}
		c := reply.Choices[0]
		return chatResult{content: c.Message.Content, reasoning: c.Message.ReasoningContent, calls: c.Message.ToolCalls, finish: c.FinishReason}
	}
	body["stream"] = true
	events, done := f.stream(t, context.Background(), "/v1/chat/completions", mustJSON(t, body))
	delete(body, "stream")
	if !done {
		t.Fatal("no [DONE]")
	}
	var r chatResult
	var content, thought strings.Builder
	for _, e := range events {
		var ch chatChunk
		if err := json.Unmarshal([]byte(e), &ch); err != nil {
			t.Fatalf("%v: %s", err, e)
		}
		if len(ch.Choices) == 0 {
			continue
		}
		c := ch.Choices[0]
		if c.Delta.Content != nil {
			content.WriteString(*c.Delta.Content)
		}
		if c.Delta.ReasoningContent != nil {
			thought.WriteString(*c.Delta.ReasoningContent)
		}
		for _, d := range c.Delta.ToolCalls {
			switch {
			case d.Index == nil:
				t.Fatalf("a tool call delta without an index: %s", e)
			case *d.Index == len(r.calls):
				if d.ID == "" || d.Type != "function" || d.Function.Name == "" {
					t.Fatalf("a call's first delta without id, type or name: %s", e)
				}
				r.calls = append(r.calls, d)
				r.pieces = append(r.pieces, 0)
			case *d.Index == len(r.calls)-1 && d.ID == "":
				r.calls[*d.Index].Function.Arguments += d.Function.Arguments
				r.pieces[*d.Index]++
			default:
				t.Fatalf("tool call delta out of order: %s", e)
			}
		}
		if c.FinishReason != nil {
			r.finish = *c.FinishReason
		}
	}
	s, th := content.String(), thought.String()
	if s != "" {
		r.content = &s
	}
	if th != "" {
		r.reasoning = &th
	}
	for i := range r.calls {
		r.calls[i].Index = nil
	}
	return r
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// weatherTool is a tool whose arguments the story model can be made to write: an enum and a
// bounded integer.
const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
	"parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome", "Oslo"]},
	"days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"], "additionalProperties": false}}}`

const timeTool = `{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["zone"]}}}`

// tool_choice "required" and a named function force well-formed calls through structured
// outputs, on the default model, whole and streamed: finish_reason tool_calls, no content, and
// arguments that validate against the tool's schema.
func TestForcedToolCalls(t *testing.T) {
	f := specServer(t)
	var weather, clock map[string]any
	json.Unmarshal([]byte(weatherTool), &weather)
	json.Unmarshal([]byte(timeTool), &clock)
	params := func(tool map[string]any) string {
		b, _ := json.Marshal(tool["function"].(map[string]any)["parameters"])
		return string(b)
	}
	schemas := map[string]string{"get_weather": params(weather), "get_time": params(clock)}
	for _, c := range []struct {
		name   string
		choice any
	}{
		{"required", "required"},
		{"named", map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}},
	} {
		for _, stream := range []bool{false, true} {
			for seed := range 2 {
				if stream && seed > 0 {
					break
				}
				// One call each (parallel_tool_calls false): the story model, free to add
				// calls, writes them until the length limit.
				body := map[string]any{"messages": []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}},
					"tools": []any{weather, clock}, "tool_choice": c.choice, "max_tokens": 220, "temperature": 1, "seed": seed,
					"parallel_tool_calls": false}
				r := chatOnce(t, f, body, stream)
				if r.finish != "tool_calls" || len(r.calls) != 1 || r.content != nil {
					t.Fatalf("%s (stream %v, seed %d): finish %s, content %q, calls %+v", c.name, stream, seed, r.finish, str(r.content), r.calls)
				}
				for _, call := range r.calls {
					s := compileSchema(t, schemas[call.Function.Name])
					if err := validates(s, call.Function.Arguments); err != nil || call.Type != "function" || !strings.HasPrefix(call.ID, "chatcmpl-tool-") {
						t.Errorf("%s: call %+v: %v", c.name, call, err)
					}
				}
			}
		}
	}
}

// With --tool-call-parser hermes and automatic tool choice, a reply that writes a
// <tool_call> block (forced here by a regular expression: the story model writes none by
// itself) comes back as tool_calls, whole and streamed, with the text before it as content;
// with --reasoning-parser qwen3, a <think> block comes back as reasoning_content.
func TestToolAndReasoningParsers(t *testing.T) {
	f := toolServer(t)
	call := `<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "(Paris|Rome)", "days": [1-7]\}\}\n</tool_call>`
	for _, stream := range []bool{false, true} {
		body := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Weather?"}}, "tools": []any{json.RawMessage(weatherTool)},
			"structured_outputs": map[string]any{"regex": `<think>[a-z]{1,6}</think>Let me check\.` + call}, "max_tokens": 100}
		r := chatOnce(t, f, body, stream)
		if r.finish != "tool_calls" || len(r.calls) != 1 || r.calls[0].Function.Name != "get_weather" || str(r.content) != "Let me check." || r.reasoning == nil {
			t.Fatalf("stream %v: finish %s, content %q, reasoning %q, calls %+v", stream, r.finish, str(r.content), str(r.reasoning), r.calls)
		}
		if err := validates(compileSchema(t, `{"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}, "days": {"type": "integer"}}, "required": ["city", "days"]}`), r.calls[0].Function.Arguments); err != nil {
			t.Errorf("arguments %s: %v", r.calls[0].Function.Arguments, err)
		}
		// tool_choice none: the same text is content.
		body["tool_choice"] = "none"
		if r := chatOnce(t, f, body, stream); r.finish != "stop" || len(r.calls) != 0 || !strings.Contains(str(r.content), "<tool_call>") {
			t.Errorf("tool_choice none: finish %s, content %q, calls %+v", r.finish, str(r.content), r.calls)
		}
	}
}

// History with an assistant's tool calls (arguments as a string or an object) and the tool's
// results is accepted; an unknown request field is served and logged, as vLLM does.
func TestToolHistoryAndUnknownFields(t *testing.T) {
	f := toolServer(t)
	body := `{"messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 1}"}},
			{"id": "call2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}}]},
		{"role": "tool", "tool_call_id": "call1", "content": "sunny"},
		{"role": "tool", "tool_call_id": "call2", "content": [{"type": "text", "text": "rain"}]},
		{"role": "assistant", "content": "It is sunny.", "reasoning_content": "Easy."},
		{"role": "user", "content": "Thanks"}],
		"tools": [` + weatherTool + `], "tool_choice": "none", "max_tokens": 4, "temprature": 0.5, "chat_template_kwargs": {"enable_thinking": false}, "reasoning_effort": "low"}`
	code, b := f.post(t, "/v1/chat/completions", body)
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	if w := toolWarnings.String(); !strings.Contains(w, `ignoring unknown request fields "temprature"`) {
		t.Errorf("warnings: %q", w)
	}
}

// A streamed call's arguments arrive in pieces as the model writes them (OpenAI's and vLLM's
// streaming), forced by a named choice, by "required", and read by the hermes parser; the
// pieces add up to the arguments of the same reply unstreamed.
func TestToolCallArgumentsStreamAsWritten(t *testing.T) {
	f := toolServer(t)
	var weather map[string]any
	json.Unmarshal([]byte(weatherTool), &weather)
	hermes := `<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "(Paris|Rome)", "days": [1-7]\}\}\n</tool_call>`
	for name, body := range map[string]map[string]any{
		"named":    {"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}},
		"required": {"tool_choice": "required", "parallel_tool_calls": false},
		"hermes":   {"structured_outputs": map[string]any{"regex": hermes}},
	} {
		body["messages"] = []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}}
		body["tools"], body["max_tokens"], body["temperature"], body["seed"] = []any{weather}, 120, 1, 4
		whole := chatOnce(t, f, body, false)
		streamed := chatOnce(t, f, body, true)
		if len(whole.calls) != 1 || len(streamed.calls) != 1 || streamed.calls[0].Function.Arguments != whole.calls[0].Function.Arguments {
			t.Fatalf("%s: streamed %+v, whole %+v", name, streamed.calls, whole.calls)
		}
		if streamed.pieces[0] < 3 {
			t.Errorf("%s: the arguments %s came in %d pieces", name, whole.calls[0].Function.Arguments, streamed.pieces[0])
		}
	}
}
