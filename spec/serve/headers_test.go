package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// A model the server does not serve is a 404 not_found_error naming the model, as OpenAI and
// vLLM answer it, on every endpoint that names one; openai-go surfaces it as a 404.
func TestUnknownModel404(t *testing.T) {
	f := specServer(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/completions", `{"model": "gpt-4", "prompt": "a"}`},
		{"POST", "/v1/chat/completions", `{"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}`},
		{"GET", "/v1/models/gpt-4", ""},
	} {
		res := f.do(t, c.method, c.path, c.body, nil)
		var e errorBody
		if res.StatusCode != http.StatusNotFound || json.NewDecoder(res.Body).Decode(&e) != nil ||
			e.Error.Type != "not_found_error" || e.Error.Param == nil || *e.Error.Param != "model" || !strings.Contains(e.Error.Message, "gpt-4") {
			t.Errorf("%s %s: %d %+v", c.method, c.path, res.StatusCode, e)
		}
		res.Body.Close()
	}
	_, err := f.client.Completions.New(context.Background(), openai.CompletionNewParams{Model: "gpt-4",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("openai-go: %v", err)
	}
}

// A browser page of an allowed origin may call the server: a preflight is answered (204,
// without the API key) with the methods and the headers asked for, and every reply allows that
// origin and exposes its X-Request-Id, which is the client's when it sent one. A page of any
// other origin gets no such headers (its browser keeps the reply from it), and its preflight a
// 400; so does every page when no origin is allowed (the default).
func TestCORSAndRequestID(t *testing.T) {
	f := specServer(t)
	preflight := func(h http.Handler, origin string) *http.Response {
		req := httptest.NewRequest("OPTIONS", "/v1/chat/completions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	res := preflight(f.s.Handler(), allowedOrigin)
	h := res.Header
	if res.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != allowedOrigin ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || h.Get("Access-Control-Allow-Headers") != "authorization, content-type" {
		t.Errorf("preflight: %d %v", res.StatusCode, h)
	}
	other, err := New(f.e, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h      http.Handler
		origin string
	}{{f.s.Handler(), "http://evil.example"}, {f.s.Handler(), "http://app.example"}, {other.Handler(), allowedOrigin}} {
		if res := preflight(c.h, c.origin); res.StatusCode != http.StatusBadRequest || res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s: %d %v", c.origin, res.StatusCode, res.Header)
		}
	}
	res = f.do(t, "POST", "/v1/completions", `{"prompt": "Once", "max_tokens": 2}`, map[string]string{"Origin": allowedOrigin, "X-Request-Id": "abc-123"})
	if res.StatusCode != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != allowedOrigin || res.Header.Get("X-Request-Id") != "abc-123" ||
		!strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Errorf("completion: %d %v", res.StatusCode, res.Header)
	}
	res.Body.Close()
	res = f.do(t, "GET", "/v1/models", "", map[string]string{"Origin": "http://evil.example"})
	if res.StatusCode != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a request from another origin: %d %v", res.StatusCode, res.Header)
	}
	res.Body.Close()
	a, b := f.do(t, "GET", "/health", "", nil), f.do(t, "GET", "/health", "", nil)
	if ida, idb := a.Header.Get("X-Request-Id"), b.Header.Get("X-Request-Id"); len(ida) < 16 || ida == idb {
		t.Errorf("generated request ids %q and %q: want distinct random ids", ida, idb)
	}
	a.Body.Close()
	b.Body.Close()
}

// --allowed-origins: a comma list or vLLM's JSON list; "*"; origins only.
func TestParseOrigins(t *testing.T) {
	for v, want := range map[string][]string{
		"":      nil,
		"*":     {"*"},
		`["*"]`: {"*"},
		"http://a.example, https://b.example:8443/": {"http://a.example", "https://b.example:8443"},
		`["http://localhost:3000"]`:                 {"http://localhost:3000"},
	} {
		if got, err := ParseOrigins(v); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %q %v, want %q", v, got, err, want)
		}
	}
	for _, v := range []string{"example.com", "http://a.example/path", "ftp://a.example", `["a"`, "http://"} {
		if got, err := ParseOrigins(v); err == nil {
			t.Errorf("%q: %q, want an error", v, got)
		}
	}
}

// GET /version answers {"version": ...} as vLLM's does.
func TestVersion(t *testing.T) {
	f := specServer(t)
	res := f.do(t, "GET", "/version", "", nil)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v struct{ Version string }
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil || v.Version == "" {
		t.Errorf("/version: %d %s", res.StatusCode, b)
	}
}

// do sends a request with the API key and the headers given.
func (f *fixture) do(t *testing.T, method, path, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method != "OPTIONS" {
		req.Header.Set("Authorization", "Bearer "+testKey)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A prompt of token ids (one list, or a list of them, as OpenAI and vLLM take it) completes as
// the text they encode does.
func TestTokenIDPrompts(t *testing.T) {
	f := specServer(t)
	ids := f.e.Tokenizer().Encode("Once upon a time", f.e.Tokenizer().AddBOS())
	text := func(body string) []string {
		res := f.do(t, "POST", "/v1/completions", body, nil)
		defer res.Body.Close()
		var r struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.NewDecoder(res.Body).Decode(&r); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", body, res.StatusCode, err)
		}
		var out []string
		for _, c := range r.Choices {
			out = append(out, c.Text)
		}
		return out
	}
	idsJSON, _ := json.Marshal(ids)
	want := text(`{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}`)
	for _, body := range []string{
		`{"prompt": ` + string(idsJSON) + `, "max_tokens": 8, "temperature": 0}`,
		`{"prompt": [` + string(idsJSON) + `, ` + string(idsJSON) + `], "max_tokens": 8, "temperature": 0}`,
	} {
		for _, got := range text(body) {
			if got != want[0] {
				t.Errorf("%s: %q, the text prompt's %q", body, got, want[0])
			}
		}
	}
}

// vLLM's stop_token_ids and truncate_prompt_tokens are taken: a stop token ends the choice
// with finish_reason stop, and a truncated prompt counts its kept tokens in the usage.
func TestVLLMStopAndTruncateFields(t *testing.T) {
	f := specServer(t)
	post := func(body string) (reply struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}) {
		res := f.do(t, "POST", "/v1/completions", body, nil)
		defer res.Body.Close()
		if err := json.NewDecoder(res.Body).Decode(&reply); err != nil || res.StatusCode != http.StatusOK || len(reply.Choices) != 1 {
			t.Fatalf("%s: %d %v", body, res.StatusCode, err)
		}
		return reply
	}
	plain := post(`{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "ignore_eos": true}`)
	toks := f.e.Tokenizer().Encode(plain.Choices[0].Text, false)
	stopped := post(fmt.Sprintf(`{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "ignore_eos": true, "stop_token_ids": [%d]}`, toks[len(toks)/2]))
	if stopped.Choices[0].FinishReason != "stop" || len(stopped.Choices[0].Text) >= len(plain.Choices[0].Text) {
		t.Errorf("stop_token_ids: %+v, the plain text %q", stopped.Choices[0], plain.Choices[0].Text)
	}
	// The request: ignore_eos, min_tokens and a token-id prompt, with the rest of
	// vLLM's text fields.
	ids := mustJSON(t, f.e.Tokenizer().Encode("Once upon a time", true))
	mixed := post(`{"prompt": ` + ids + `, "max_tokens": 12, "min_tokens": 12, "temperature": 0, "ignore_eos": true,
		"include_stop_str_in_output": true, "skip_special_tokens": true, "spaces_between_special_tokens": false}`)
	if mixed.Choices[0].Text != plain.Choices[0].Text || mixed.Usage.PromptTokens != 5 {
		t.Errorf("token-id prompt with min_tokens: %q (%d prompt tokens), the text prompt's %q", mixed.Choices[0].Text, mixed.Usage.PromptTokens, plain.Choices[0].Text)
	}
	if tr := post(`{"prompt": "Once upon a time there was a girl", "max_tokens": 2, "truncate_prompt_tokens": 3}`); tr.Usage.PromptTokens != 3 {
		t.Errorf("truncate_prompt_tokens 3: %d prompt tokens", tr.Usage.PromptTokens)
	}
}

// POST /tokenize and /detokenize as vLLM's: the prompt's ids (BOS as the tokenizer adds it,
// unless add_special_tokens is false), the count and the context; ids back to the text.
func TestTokenizeDetokenize(t *testing.T) {
	f := specServer(t)
	tok := f.e.Tokenizer()
	res := f.do(t, "POST", "/tokenize", `{"prompt": "Once upon a time", "return_token_strs": true}`, nil)
	var tr tokenizeReply
	if err := json.NewDecoder(res.Body).Decode(&tr); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/tokenize: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	want := tok.Encode("Once upon a time", tok.AddBOS())
	if tr.Count != len(want) || len(tr.Tokens) != len(want) || tr.Tokens[len(want)-1] != want[len(want)-1] ||
		tr.MaxModelLen != f.e.Info().Config.MaxSeq || len(tr.TokenStrs) != len(want) {
		t.Errorf("/tokenize: %+v, want tokens %v", tr, want)
	}
	res = f.do(t, "POST", "/tokenize", `{"prompt": "Once", "add_special_tokens": false}`, nil)
	tr = tokenizeReply{}
	json.NewDecoder(res.Body).Decode(&tr)
	res.Body.Close()
	if len(tr.Tokens) == 0 || tr.Tokens[0] == tok.BOS() {
		t.Errorf("add_special_tokens false: %v starts with BOS", tr.Tokens)
	}
	ids, _ := json.Marshal(want[1:])
	res = f.do(t, "POST", "/detokenize", `{"tokens": `+string(ids)+`}`, nil)
	var dr detokenizeReply
	if err := json.NewDecoder(res.Body).Decode(&dr); err != nil || dr.Prompt != "Once upon a time" {
		t.Errorf("/detokenize: %d %q %v", res.StatusCode, dr.Prompt, err)
	}
	res.Body.Close()
	// messages: rendered through the chat template, the chat request's own prompt tokens
	msgs := `"messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me a story."}]`
	res = f.do(t, "POST", "/tokenize", `{`+msgs+`}`, nil)
	tr = tokenizeReply{}
	json.NewDecoder(res.Body).Decode(&tr)
	res.Body.Close()
	code, b := f.post(t, "/v1/chat/completions", `{`+msgs+`, "max_tokens": 1}`)
	var cr chatReply
	if code != 200 || json.Unmarshal(b, &cr) != nil || tr.Count == 0 || tr.Count != cr.Usage.PromptTokens {
		t.Errorf("/tokenize with messages: %d tokens, the chat's prompt %d (%d %s)", tr.Count, cr.Usage.PromptTokens, code, b)
	}
	for _, c := range [][2]string{{"/tokenize", `{"model": "x", "prompt": "a"}`}, {"/detokenize", `{"tokens": [-1]}`}, {"/detokenize", `{"tokens": [5, null]}`},
		{"/tokenize", `{"prompt": "a", ` + msgs + `}`}, {"/tokenize", `{"messages": []}`}} {
		path, body := c[0], c[1]
		res := f.do(t, "POST", path, body, nil)
		if res.StatusCode/100 != 4 {
			t.Errorf("%s %s: %d, want a 4xx", path, body, res.StatusCode)
		}
		res.Body.Close()
	}
}

// /v1/models says which drafter the server speculates with.
func TestModelsShowDrafter(t *testing.T) {
	f := specServer(t)
	res := f.do(t, "GET", "/v1/models", "", nil)
	defer res.Body.Close()
	var l struct {
		Data []modelCard `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&l); err != nil || len(l.Data) != 1 || l.Data[0].Speculative == nil ||
		l.Data[0].Speculative.Method != "ngram" || l.Data[0].Speculative.NumSpeculativeTokens != 4 {
		t.Errorf("/v1/models: %+v %v", l, err)
	}
}
