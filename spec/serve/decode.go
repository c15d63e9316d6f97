package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/wspec/wspec/spec/engine"
)

// decodeBody reads a request body of at most Config.MaxBodyBytes and decodes it into v: it
// must be valid UTF-8 and one JSON object, each field v names of the right type. A top-level
// field v does not name is ignored with a line to Config.Warnings, as vLLM does. Every failure
// is a 400 naming the field where one is at fault (413 for a body too large, 408 for one slower
// than Config.BodyTimeout, 503 for one cut off by a drain).
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if !utf8.Valid(body) {
		return invalid("", codeInvalidJSON, "the request body is not valid UTF-8")
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return invalid("", codeInvalidJSON, "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("", codeInvalidJSON, "the request body has data after its JSON object")
	}
	if err := readSampling(body, v); err != nil {
		return err
	}
	if unknown := unknownFields(body, v); len(unknown) > 0 && s.cfg.Warnings != nil {
		fmt.Fprintf(s.cfg.Warnings, "warning: %s %s: ignoring unknown request fields %s\n", r.Method, r.URL.Path, strings.Join(unknown, ", "))
	}
	return nil
}

// knownFields caches the JSON field names of each request type.
var knownFields sync.Map // reflect.Type -> map[string]bool

// unknownFields lists the top-level fields of body (a JSON object) that v's type does not
// name, quoted and sorted.
func unknownFields(body []byte, v any) []string {
	t := reflect.TypeOf(v).Elem()
	names, ok := knownFields.Load(t)
	if !ok {
		m := map[string]bool{}
		addFields(m, t)
		names, _ = knownFields.LoadOrStore(t, m)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return nil
	}
	_, sampled := v.(sampledRequest)
	var out []string
	for k := range obj {
		if !names.(map[string]bool)[k] && !(sampled && engine.SamplingParamNamed(k) != nil) {
			out = append(out, strconv.Quote(k))
		}
	}
	sort.Strings(out)
	return out
}

// addFields adds the JSON names of struct type t's fields, embedded structs' included.
func addFields(m map[string]bool, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			addFields(m, f.Type)
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = true
		}
	}
}

// readBody reads the body within Config.BodyTimeout, then lifts the deadline (the connection
// is still read while the reply is written, to notice a client that goes away). A drain cuts
// the bodies still arriving. After a failure the deadline stays, so that the server does not
// wait for the rest of the body before closing the connection.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	s.reading.Store(rc, struct{}{})
	if s.draining.Load() {
		_ = rc.SetReadDeadline(time.Now())
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	s.reading.Delete(rc)
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		_ = rc.SetReadDeadline(time.Time{})
		return body, nil
	case errors.As(err, &tooLarge):
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: codeTooLarge,
			Message: fmt.Sprintf("the request body is larger than %d bytes", s.cfg.MaxBodyBytes)}
	case s.draining.Load():
		w.Header().Set("Connection", "close")
		return nil, errShuttingDown
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return nil, &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: codeBodyTimeout,
			Message: fmt.Sprintf("the request body took longer than %v to arrive", s.cfg.BodyTimeout)}
	}
	return nil, invalid("", codeInvalidJSON, "reading the request body: %v", err)
}

// cutBodies makes the bodies still arriving fail now (a drain does not wait for them).
func (s *Server) cutBodies() {
	s.reading.Range(func(k, _ any) bool {
		_ = k.(*http.ResponseController).SetReadDeadline(time.Now())
		return true
	})
}

// jsonError turns encoding/json's errors into a 400 naming the field.
func jsonError(err error) error {
	var (
		ae     *apiError
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &syntax):
		return invalid("", codeInvalidJSON, "invalid JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return invalid("", codeInvalidType, "the request body must be a JSON object, not %s", typ.Value)
		}
		field := strings.TrimPrefix(typ.Field, "samplingFields.") // the embedded struct is no part of the wire
		return invalid(field, codeInvalidType, "%s: want %s, got %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("", codeInvalidJSON, "invalid JSON: the body ends in the middle of a value")
	}
	return invalid("", codeInvalidJSON, "invalid JSON: %v", err)
}

// jsonKind names a Go kind as JSON would.
func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "a boolean"
	case k == "string":
		return "a string"
	case k == "slice", k == "array":
		return "an array"
	case k == "map", k == "struct", k == "ptr":
		return "an object"
	}
	return k
}

// stopField is OpenAI's stop: a string or an array of strings.
type stopField []string

func (s *stopField) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stopField{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return invalid("stop", codeInvalidType, "stop: want a string or an array of strings")
	}
	*s = many
	return nil
}

// promptField is the completions prompt: a string, an array of strings, an array of token
// ids or an array of them (one choice set each), as OpenAI and vLLM take it.
type promptField struct {
	prompts []engine.Prompt
	set     bool
}

func (p *promptField) UnmarshalJSON(b []byte) error {
	p.set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		p.set = false
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		p.prompts = []engine.Prompt{{Text: one}}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err == nil {
		p.prompts = make([]engine.Prompt, len(many))
		for i, t := range many {
			p.prompts[i] = engine.Prompt{Text: t}
		}
		return nil
	}
	var ids []json.Number
	if err := json.Unmarshal(b, &ids); err == nil {
		toks, err := tokenIDs(ids)
		p.prompts = []engine.Prompt{{Tokens: toks}}
		return err
	}
	var idss [][]json.Number
	if err := json.Unmarshal(b, &idss); err == nil {
		for _, ids := range idss {
			toks, err := tokenIDs(ids)
			if err != nil {
				return err
			}
			p.prompts = append(p.prompts, engine.Prompt{Tokens: toks})
		}
		return nil
	}
	return invalid("prompt", codeInvalidType, "prompt: want a string, an array of strings, an array of token ids or an array of them")
}

// tokenIDs reads a token-id prompt: integers (the engine checks them against the vocabulary),
// at least one.
func tokenIDs(ids []json.Number) ([]int, error) {
	if len(ids) == 0 {
		return nil, invalid("prompt", codeInvalidValue, "prompt: an empty list of token ids")
	}
	out := make([]int, len(ids))
	for i, n := range ids {
		v, err := strconv.ParseInt(n.String(), 10, 32)
		if err != nil {
			return nil, invalid("prompt", codeInvalidType, "prompt: token id %s is not an integer", n)
		}
		out[i] = int(v)
	}
	return out, nil
}

// contentField is a message's content: a string, null, or an array of text parts.
type contentField struct {
	text string
	null bool
	set  bool // the field was there (null or not)
}

type contentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

func (c *contentField) UnmarshalJSON(b []byte) error {
	c.set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		c.null = true
		return nil
	}
	if err := json.Unmarshal(b, &c.text); err == nil {
		return nil
	}
	var parts []contentPart
	if err := json.Unmarshal(b, &parts); err != nil {
		return invalid("messages", codeInvalidType, "messages: a content must be a string or an array of {\"type\": \"text\", \"text\": ...} parts")
	}
	var sb strings.Builder
	for i, p := range parts {
		switch {
		case p.Type != "text":
			return invalid("messages", codeUnsupported, "messages: content parts of type %q are not supported (only \"text\")", p.Type)
		case p.Text == nil:
			return invalid("messages", codeInvalidType, "messages: content part %d of type \"text\" has no \"text\" string", i)
		}
		sb.WriteString(*p.Text)
	}
	c.text = sb.String()
	return nil
}
