package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// decodeBody reads a request body of at most limit bytes and decodes it strictly into v: it
// must be valid UTF-8 and one JSON object whose fields v names, each of the right type.
// Every failure is a 400 naming the field where one is at fault (413 for a body too large).
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: codeTooLarge,
				Message: fmt.Sprintf("the request body is larger than %d bytes", limit)}
		}
		return invalid("", codeInvalidJSON, "reading the request body: %v", err)
	}
	if !utf8.Valid(body) {
		return invalid("", codeInvalidJSON, "the request body is not valid UTF-8")
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return invalid("", codeInvalidJSON, "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("", codeInvalidJSON, "the request body has data after its JSON object")
	}
	return nil
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
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return invalid(f, codeUnknownField, "unknown field %q (this server accepts the fields of the OpenAI API it implements, listed in the README)", f)
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

// promptField is the completions prompt: a string or an array of strings (one choice set
// each). Token-id prompts are refused: the engine takes text.
type promptField struct {
	texts []string
	set   bool
}

func (p *promptField) UnmarshalJSON(b []byte) error {
	p.set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		p.set = false
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		p.texts = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err == nil {
		p.texts = many
		return nil
	}
	var ids []json.Number
	if err := json.Unmarshal(b, &ids); err == nil {
		return invalid("prompt", codeUnsupported, "prompt: token-id prompts are not supported; send the text")
	}
	var idss [][]json.Number
	if err := json.Unmarshal(b, &idss); err == nil {
		return invalid("prompt", codeUnsupported, "prompt: token-id prompts are not supported; send the text")
	}
	return invalid("prompt", codeInvalidType, "prompt: want a string or an array of strings")
}

// contentField is a message's content: a string, null, or an array of text parts.
type contentField struct {
	text string
	null bool
}

type contentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

func (c *contentField) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		c.null = true
		return nil
	}
	if err := json.Unmarshal(b, &c.text); err == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var parts []contentPart
	if err := dec.Decode(&parts); err != nil {
		return invalid("messages", codeInvalidType, "messages: a content must be a string or an array of {\"type\": \"text\", \"text\": ...} parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return invalid("messages", codeUnsupported, "messages: content parts of type %q are not supported (only \"text\")", p.Type)
		}
		sb.WriteString(*p.Text)
	}
	c.text = sb.String()
	return nil
}
