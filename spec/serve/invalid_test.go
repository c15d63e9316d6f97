package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/wspec/wspec/spec/engine"
)

// Every invalid request gets a 400 with OpenAI's error object naming the field at fault, and
// the server goes on serving.
func TestInvalidRequests(t *testing.T) {
	f := specServer(t)
	long := strings.Repeat("the dog ran to the big red house and ", 60) // about 600 tokens: beyond the context
	manyStops, _ := json.Marshal(make([]string, 17))
	cases := []struct {
		name, path, body string
		param, code      string // "" is null
	}{
		{"bad JSON", "/v1/completions", `{"model": "stories15M", "prompt": "a"`, "", codeInvalidJSON},
		{"not an object", "/v1/completions", `["a"]`, "", codeInvalidJSON},
		{"trailing data", "/v1/completions", `{"prompt": "a"} {"prompt": "b"}`, "", codeInvalidJSON},
		{"invalid UTF-8", "/v1/completions", "{\"prompt\": \"a\xff\xfeb\"}", "", codeInvalidJSON},
		{"string for an integer", "/v1/completions", `{"prompt": "a", "max_tokens": "ten"}`, "max_tokens", codeInvalidType},
		{"fraction for an integer", "/v1/completions", `{"prompt": "a", "seed": 1.5}`, "seed", codeInvalidType},
		{"string for a boolean", "/v1/completions", `{"prompt": "a", "stream": true, "stream_options": {"include_usage": "yes"}}`, "stream_options.include_usage", codeInvalidType},
		{"number for a prompt", "/v1/completions", `{"prompt": 42}`, "prompt", codeInvalidType},
		{"no prompt", "/v1/completions", `{"model": "stories15M"}`, "prompt", codeMissing},
		{"token id outside the vocabulary", "/v1/completions", `{"prompt": [1, 2, 32000]}`, "prompt", codeInvalidValue},
		{"fractional token id", "/v1/completions", `{"prompt": [1, 2.5]}`, "prompt", codeInvalidType},
		{"stop_token_ids outside the vocabulary", "/v1/completions", `{"prompt": "a", "stop_token_ids": [32000]}`, "stop_token_ids", codeInvalidValue},
		{"min_tokens over max_tokens", "/v1/completions", `{"prompt": "a", "max_tokens": 2, "min_tokens": 3}`, "min_tokens", codeInvalidValue},
		{"string for skip_special_tokens", "/v1/completions", `{"prompt": "a", "skip_special_tokens": "no"}`, "skip_special_tokens", codeInvalidType},
		{"truncate_prompt_tokens -2", "/v1/completions", `{"prompt": "a", "truncate_prompt_tokens": -2}`, "truncate_prompt_tokens", codeInvalidValue},
		{"empty token-id prompt", "/v1/completions", `{"prompt": [[1], []]}`, "prompt", codeInvalidValue},
		{"negative max_tokens", "/v1/completions", `{"prompt": "a", "max_tokens": -1}`, "max_tokens", codeInvalidValue},
		{"huge max_tokens", "/v1/completions", `{"prompt": "a", "max_tokens": 1000000000}`, "max_tokens", codeContextLength},
		{"max_tokens past the context", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 255}`, "max_tokens", codeContextLength},
		{"prompt beyond the context", "/v1/completions", mustJSON(t, map[string]any{"prompt": long}), "prompt", codeContextLength},
		{"chat beyond the context", "/v1/chat/completions", mustJSON(t, map[string]any{"messages": []map[string]string{{"role": "user", "content": long}}}), "messages", codeContextLength},
		{"negative temperature", "/v1/completions", `{"prompt": "a", "temperature": -0.5}`, "temperature", codeInvalidValue},
		{"huge temperature", "/v1/completions", `{"prompt": "a", "temperature": 1e308}`, "temperature", codeInvalidValue},
		{"top_p above 1", "/v1/completions", `{"prompt": "a", "top_p": 1.01}`, "top_p", codeInvalidValue},
		{"top_k -2", "/v1/completions", `{"prompt": "a", "top_k": -2}`, "top_k", codeInvalidValue},
		{"min_p above 1", "/v1/completions", `{"prompt": "a", "min_p": 1.5}`, "min_p", codeInvalidValue},
		{"presence_penalty 3", "/v1/completions", `{"prompt": "a", "presence_penalty": 3}`, "presence_penalty", codeInvalidValue},
		{"negative repetition_penalty", "/v1/completions", `{"prompt": "a", "repetition_penalty": -1}`, "repetition_penalty", codeInvalidValue},
		{"n 0", "/v1/completions", `{"prompt": "a", "n": 0}`, "n", codeInvalidValue},
		{"n 1000", "/v1/completions", `{"prompt": "a", "n": 1000}`, "n", codeInvalidValue},
		{"stop list too long", "/v1/completions", `{"prompt": "a", "stop": ` + string(manyStops) + `}`, "stop", codeInvalidValue},
		{"empty stop string", "/v1/completions", `{"prompt": "a", "stop": ""}`, "stop", codeInvalidValue},
		{"stop string too long", "/v1/completions", mustJSON(t, map[string]any{"prompt": "a", "stop": strings.Repeat("x", engine.MaxStopBytes+1)}), "stop", codeInvalidValue},
		{"stop of numbers", "/v1/completions", `{"prompt": "a", "stop": [1, 2]}`, "stop", codeInvalidType},
		{"stream_options without stream", "/v1/completions", `{"prompt": "a", "stream_options": {"include_usage": true}}`, "stream_options", codeInvalidValue},
		{"logit_bias key not a token", "/v1/completions", `{"prompt": "a", "logit_bias": {"abc": 1}}`, "logit_bias", codeInvalidValue},
		{"logit_bias token outside the vocabulary", "/v1/completions", `{"prompt": "a", "logit_bias": {"32000": 1}}`, "logit_bias", codeInvalidValue},
		{"logit_bias value 500", "/v1/completions", `{"prompt": "a", "logit_bias": {"5": 500}}`, "logit_bias", codeInvalidValue},
		{"completions logprobs 30", "/v1/completions", `{"prompt": "a", "logprobs": 30}`, "logprobs", codeInvalidValue},
		{"max_tokens 0 without scoring", "/v1/completions", `{"prompt": "a", "max_tokens": 0}`, "max_tokens", codeInvalidValue},
		{"prompt_logprobs 30", "/v1/completions", `{"prompt": "a", "prompt_logprobs": 30}`, "prompt_logprobs", codeInvalidValue},
		{"prompt_logprobs -1", "/v1/completions", `{"prompt": "a", "prompt_logprobs": -1}`, "prompt_logprobs", codeInvalidValue},
		{"prompt_logprobs streamed", "/v1/completions", `{"prompt": "a", "prompt_logprobs": 1, "stream": true}`, "prompt_logprobs", codeInvalidValue},
		{"speculative k 99", "/v1/completions", `{"prompt": "a", "speculative": {"num_speculative_tokens": 99}}`, "speculative", codeInvalidValue},
		{"no messages", "/v1/chat/completions", `{"messages": []}`, "messages", codeMissing},
		{"unknown role", "/v1/chat/completions", `{"messages": [{"role": "robot", "content": "hi"}]}`, "messages", codeInvalidValue},
		{"numeric content", "/v1/chat/completions", `{"messages": [{"role": "user", "content": 5}]}`, "messages", codeInvalidType},
		{"text part without text", "/v1/chat/completions", `{"messages": [{"role": "user", "content": [{"type": "text"}]}]}`, "messages", codeInvalidType},
		{"image content", "/v1/chat/completions", `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}`, "messages", codeUnsupported},
		{"top_logprobs without logprobs", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}`, "top_logprobs", codeInvalidValue},
		{"top_logprobs 50", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 50}`, "top_logprobs", codeInvalidValue},
		{"tool without a name", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}], "tool_choice": "required"}`, "tools", codeMissing},
		{"auto tool choice without a parser", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}]}`, "tool_choice", codeInvalidValue},
		{"tool_choice without tools", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}`, "tool_choice", codeInvalidValue},
		{"tool_choice of an unknown tool", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}}`, "tool_choice", codeInvalidValue},
		{"tool_choice sometimes", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "sometimes"}`, "tool_choice", codeInvalidValue},
		{"tool parameters outside the subset", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"not": {}}}}], "tool_choice": "required"}`, "tool_choice", codeInvalidValue},
		{"tool choice and response_format", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required", "response_format": {"type": "json_object"}}`, "tool_choice", codeInvalidValue},
		{"tool message without content", "/v1/chat/completions", `{"messages": [{"role": "tool", "tool_call_id": "x"}]}`, "messages", codeInvalidValue},
		{"tool_calls on a user message", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}`, "messages", codeInvalidValue},
		{"reserved chat_template_kwargs", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"messages": []}}`, "chat_template_kwargs", codeInvalidValue},
		{"continue_final_message with add_generation_prompt", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "continue_final_message": true, "add_generation_prompt": true}`, "continue_final_message", codeInvalidValue},
		{"schema outside the subset", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {"type": "string"}}}}}`, "response_format", codeInvalidValue},
		{"response_format xml", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}}`, "response_format", codeUnsupported},
		{"json_schema without a schema", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}`, "response_format", codeMissing},
		{"bad regex", "/v1/completions", `{"prompt": "a", "structured_outputs": {"regex": "(ab"}}`, "structured_outputs", codeInvalidValue},
		{"left-recursive grammar", "/v1/completions", `{"prompt": "a", "guided_grammar": "root ::= root \"x\" | \"y\""}`, "guided_grammar", codeInvalidValue},
		{"empty choice", "/v1/completions", `{"prompt": "a", "guided_choice": []}`, "guided_choice", codeInvalidValue},
		{"two structured outputs", "/v1/completions", `{"prompt": "a", "guided_regex": "a+", "guided_choice": ["a"]}`, "guided_choice", codeInvalidValue},
		{"misspelt structured_outputs key", "/v1/completions", `{"prompt": "a", "structured_outputs": {"regx": "a+"}}`, "structured_outputs", codeInvalidValue},
		{"misspelt speculative key", "/v1/completions", `{"prompt": "a", "speculative": {"num_speculative_token": 2}}`, "speculative", codeInvalidValue},
		{"misspelt response_format key", "/v1/completions", `{"prompt": "a", "response_format": {"type": "json_object", "shema": {}}}`, "response_format", codeInvalidValue},
		{"misspelt json_schema key", "/v1/completions", `{"prompt": "a", "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "strit": true}}}`, "response_format.json_schema", codeInvalidValue},
		{"misspelt stream_options key", "/v1/completions", `{"prompt": "a", "stream": true, "stream_options": {"include_usge": true}}`, "stream_options", codeInvalidValue},
		{"chat_template_kwargs too deep", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}`, "chat_template_kwargs", codeInvalidValue},
		{"tools too deep", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}]}`, "tools", codeInvalidValue},
		{"60000 empty messages", "/v1/chat/completions", `{"messages": [` + strings.Repeat(`{"role": "user", "content": ""},`, 59999) + `{"role": "user", "content": ""}]}`, "messages", codeInvalidValue},
		{"129 tools", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [` + strings.Repeat(`{"type": "function", "function": {"name": "f"}},`, 128) + `{"type": "function", "function": {"name": "f"}}]}`, "tools", codeInvalidValue},
		{"chat max_completion_tokens 0", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 0}`, "max_completion_tokens", codeInvalidValue},
	}
	for _, c := range cases {
		code, b := f.post(t, c.path, c.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if code != http.StatusBadRequest || json.Unmarshal(b, &e) != nil {
			t.Errorf("%s: %d %s", c.name, code, b)
			continue
		}
		param := ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if e.Error.Type != "invalid_request_error" || e.Error.Message == "" || param != c.param || e.Error.Code == nil || *e.Error.Code != c.code {
			t.Errorf("%s: %s, want param %q code %q", c.name, b, c.param, c.code)
		}
	}
	t.Logf("%d invalid requests refused", len(cases))

	// The official client surfaces the error object.
	_, err := f.client.Completions.New(context.Background(), openai.CompletionNewParams{Model: model,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")}, Temperature: openai.Float(-1)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "temperature" || apiErr.Type != "invalid_request_error" || apiErr.Code != codeInvalidValue {
		t.Errorf("openai-go: %v", err)
	}
	// A streamed request that is invalid gets the 400 before any event.
	stream := f.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "nope",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if stream.Next() || !errors.As(stream.Err(), &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != codeModelNotFound {
		t.Errorf("streamed: %v", stream.Err())
	}

	// And the server still serves.
	c, err := f.client.Completions.New(context.Background(), openai.CompletionNewParams{Model: model,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")}, MaxTokens: openai.Int(4), Temperature: openai.Float(0)})
	if err != nil || len(c.Choices) != 1 || c.Usage.CompletionTokens != 4 {
		t.Fatalf("after the invalid requests: %v %+v", err, c)
	}
	f.waitIdle(t)
}

// Without the API key a /v1 request gets a 401 (the open routes stay open); a body over the
// limit gets a 413; a wrong method a 405 and an unknown path a 404, all as error objects.
func TestAuthLimitsAndRoutes(t *testing.T) {
	f := specServer(t)
	for _, key := range []string{"", "sk-wrong"} {
		opts := []option.RequestOption{option.WithBaseURL(f.ts.URL + "/v1/"), option.WithMaxRetries(0), option.WithAPIKey(key)}
		if key == "" {
			opts = append(opts, option.WithHeaderDel("Authorization"))
		}
		cl := openai.NewClient(opts...)
		_, err := cl.Models.List(context.Background())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != codeInvalidAPIKey {
			t.Errorf("key %q: %v", key, err)
		}
	}
	for _, path := range []string{"/health", "/metrics"} {
		resp, err := http.Get(f.ts.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s without a key: %v %v", path, err, resp)
		} else {
			resp.Body.Close()
		}
	}
	huge := `{"prompt": "` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`
	if code, b := f.post(t, "/v1/completions", huge); code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), codeTooLarge) {
		t.Errorf("a body over the limit: %d %.200s", code, b)
	}
	req, _ := http.NewRequest("GET", f.ts.URL+"/v1/completions", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/completions: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} { // the open routes too
		req, _ := http.NewRequest(m, f.ts.URL+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
			t.Errorf("%s /metrics: %v %v", m, err, resp)
		} else {
			resp.Body.Close()
		}
	}
	if code, b := f.post(t, "/v1/embeddings", `{}`); code != http.StatusNotFound || !strings.Contains(string(b), `"not_found_error"`) {
		t.Errorf("/v1/embeddings: %d %s", code, b)
	}
}
