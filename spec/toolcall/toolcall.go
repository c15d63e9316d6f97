// Package toolcall reads function calls out of a model's text, as vLLM's tool parsers do
// (--tool-call-parser): hermes (Qwen, Hermes: <tool_call>{"name": ..., "arguments": ...}
// </tool_call> blocks), llama3_json (Llama 3.1-3.3: a JSON object {"name": ...,
// "parameters": ...} as the whole reply, optionally after <|python_tag|>, several separated
// by ";") and mistral ([TOOL_CALLS] then a JSON list of {"name", "arguments"}, or the newer
// name{arguments} form). A Stream takes the text as it is generated and gives back the
// content that is surely not part of a call, and each call once it is whole.
//
// It also builds the JSON Schema that forces calls (tool_choice "required" or a named
// function) and reads the text written under it back into calls.
package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/wspec/wspec/spec/holdback"
)

// Call is one function call: the function's name and its arguments as a JSON object's text.
type Call struct {
	Name      string
	Arguments string
}

// format is one parser: where calls start and how the text after that reads as calls.
type format struct {
	// start is the marker that opens the calls; asWhole says the calls must be the whole
	// reply (llama3_json: the reply opens with start or with "{").
	start   string
	asWhole bool
	// end closes one call (hermes), so that each call can be sent as soon as it closes.
	end string
	// parse reads the text from the marker on (marker included) into calls.
	parse func(text string) ([]Call, error)
	// bare: a reply that opens with a JSON object, or with a ```json (or plain ```) fence,
	// is held back to its end and read as calls when it is nothing but calls with their
	// arguments, as llama.cpp's Hermes parser reads them: Qwen2.5-Coder writes its calls so,
	// without the marker (bare.go).
	bare bool
}

var formats = map[string]format{
	"hermes":      {start: "<tool_call>", end: "</tool_call>", parse: parseHermes, bare: true},
	"llama3_json": {start: "<|python_tag|>", asWhole: true, parse: parseLlama3},
	"mistral":     {start: "[TOOL_CALLS]", parse: parseMistral},
}

// Parsers are the names of the parsers, sorted.
func Parsers() []string {
	var out []string
	for name := range formats {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// SpecialMarker says whether the parser's marker is a special token in the families that use
// it (Llama 3's <|python_tag|>, Mistral's [TOOL_CALLS]), so that the text must keep special
// tokens for the parser to see it.
func SpecialMarker(parser string) bool { return parser == "llama3_json" || parser == "mistral" }

// Valid says whether name is a parser.
func Valid(name string) bool { _, ok := formats[name]; return ok }

// Parse reads a whole reply: the content (the text before the calls; all of it when the calls
// do not parse) and the calls.
func Parse(parser, text string) (content string, calls []Call) {
	s := NewStream(parser)
	c1, early := s.Push(text)
	c2, calls := s.Finish()
	return c1 + c2, append(early, calls...)
}

// Stream is one reply's parse as its text arrives.
type Stream struct {
	f       format
	pending string // text held back: it may be the start of the marker
	calls   strings.Builder
	inCalls bool
	done    int  // the length of s.calls's text already read into calls (formats with end)
	sent    int  // the calls already returned
	decided bool // asWhole: whether the reply is calls is known (bare: whether it may be)
	holding bool // bare: the reply opened as calls may; it is held back to Finish
}

// NewStream starts a parse with the named parser (see Valid).
func NewStream(parser string) *Stream { return &Stream{f: formats[parser]} }

// Push takes new text and returns the content that can be sent now, and the calls that have
// closed (hermes's, each as its </tool_call> arrives; the other formats' come from Finish).
func (s *Stream) Push(text string) (content string, calls []Call) {
	if s.inCalls {
		s.calls.WriteString(text)
		return "", s.early()
	}
	if s.holding {
		s.pending += text
		return "", nil
	}
	text = s.pending + text
	s.pending = ""
	if s.f.asWhole {
		return s.pushWhole(text), nil
	}
	if s.f.bare && !s.decided {
		if s.holding = s.bareOpening(text); s.holding || !s.decided {
			s.pending = text
			return "", nil
		}
	}
	if i := strings.Index(text, s.f.start); i >= 0 {
		s.inCalls = true
		s.calls.WriteString(text[i:])
		return text[:i], s.early()
	}
	keep := holdback.Partial(text, s.f.start)
	s.pending = text[len(text)-keep:]
	return text[:len(text)-keep], nil
}

// pushWhole decides at the first non-blank text whether the reply is calls.
func (s *Stream) pushWhole(text string) string {
	if s.decided {
		return text
	}
	t := strings.TrimLeft(text, " \t\r\n")
	switch {
	case t == "":
		s.pending = text
		return ""
	case strings.HasPrefix(t, s.f.start) || strings.HasPrefix(t, "{"):
		s.decided, s.inCalls = true, true
		s.calls.WriteString(text)
		return ""
	case strings.HasPrefix(s.f.start, t):
		s.pending = text // maybe the marker, cut short
		return ""
	}
	s.decided = true
	return text
}

// early returns the calls whose blocks have closed since the last time, for formats with an
// end marker. A block that does not parse is left for Finish.
func (s *Stream) early() []Call {
	if s.f.end == "" {
		return nil
	}
	var out []Call
	text := s.calls.String()
	for {
		rest := text[s.done:]
		i := strings.Index(rest, s.f.end)
		if i < 0 {
			return out
		}
		calls, err := s.f.parse(rest[:i+len(s.f.end)])
		if err != nil {
			return out
		}
		s.done += i + len(s.f.end)
		s.sent += len(calls)
		out = append(out, calls...)
	}
}

// Finish ends the reply: the content still held back and the calls. Text that does not parse
// as calls is returned as content, whole.
func (s *Stream) Finish() (content string, calls []Call) {
	if s.holding {
		text := s.pending
		s.pending, s.holding = "", false
		if calls, ok := bareCalls(text); ok {
			return "", calls
		}
		return text, nil
	}
	if !s.inCalls {
		out := s.pending
		s.pending = ""
		return out, nil
	}
	text := s.calls.String()[s.done:]
	if s.sent > 0 && strings.TrimSpace(text) == "" {
		return "", nil
	}
	calls, err := s.f.parse(text)
	if err != nil || len(calls) == 0 {
		return text, nil
	}
	return "", calls
}

// callJSON is a call as the formats write it; arguments may be "arguments" or "parameters".
type callJSON struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
}

func (c callJSON) call() (Call, error) {
	args := c.Arguments
	if len(args) == 0 {
		args = c.Parameters
	}
	if c.Name == "" {
		return Call{}, fmt.Errorf("a call without a name")
	}
	return Call{Name: c.Name, Arguments: argumentsText(args)}, nil
}

// argumentsText is a call's arguments as a JSON text: an object as written (compacted), a
// string holding JSON as its content, nothing as {}.
func argumentsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// decodeCalls reads one or more JSON objects (or lists of them) from text, separated by
// blanks or sep.
func decodeCalls(text, sep string) ([]Call, error) {
	var out []Call
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, err
		}
		var one callJSON
		var many []callJSON
		switch {
		case json.Unmarshal(raw, &many) == nil:
		case json.Unmarshal(raw, &one) == nil:
			many = []callJSON{one}
		default:
			return nil, fmt.Errorf("not a call: %s", raw)
		}
		for _, c := range many {
			call, err := c.call()
			if err != nil {
				return nil, err
			}
			out = append(out, call)
		}
		rest := strings.TrimLeft(text[dec.InputOffset():], " \t\r\n")
		if sep != "" && strings.HasPrefix(rest, sep) {
			rest = rest[len(sep):]
		}
		text = rest
		dec = json.NewDecoder(strings.NewReader(text))
	}
	return out, nil
}

// parseHermes reads <tool_call>{...}</tool_call> blocks (the last may be left open); text
// between blocks is dropped, as vLLM does.
func parseHermes(text string) ([]Call, error) {
	var out []Call
	for {
		i := strings.Index(text, "<tool_call>")
		if i < 0 {
			break
		}
		text = text[i+len("<tool_call>"):]
		body := text
		if j := strings.Index(text, "</tool_call>"); j >= 0 {
			body, text = text[:j], text[j+len("</tool_call>"):]
		} else {
			text = ""
		}
		calls, err := decodeCalls(body, "")
		if err != nil {
			return nil, err
		}
		out = append(out, calls...)
	}
	return out, nil
}

// parseLlama3 reads JSON objects with name and parameters (or arguments), after an optional
// <|python_tag|>, separated by ";".
func parseLlama3(text string) ([]Call, error) {
	text = strings.TrimSpace(text)
	text = strings.TrimPrefix(text, "<|python_tag|>")
	return decodeCalls(text, ";")
}

// parseMistral reads [TOOL_CALLS] followed by a JSON list of calls (Mistral's v3 tokenizers),
// or by name{arguments} (or name[ARGS]{arguments}), once per call (the v11 ones).
func parseMistral(text string) ([]Call, error) {
	var out []Call
	for _, part := range strings.Split(text, "[TOOL_CALLS]")[1:] {
		part = strings.TrimSpace(part)
		if strings.HasPrefix(part, "[") || strings.HasPrefix(part, "{") {
			calls, err := decodeCalls(part, "")
			if err != nil {
				return nil, err
			}
			out = append(out, calls...)
			continue
		}
		name, args, ok := strings.Cut(part, "{")
		name = strings.TrimSpace(name)
		if id := strings.Index(name, "[CALL_ID]"); id >= 0 {
			name = name[:id]
		}
		name = strings.TrimSuffix(strings.TrimSpace(name), "[ARGS]")
		if !ok || name == "" {
			return nil, fmt.Errorf("a [TOOL_CALLS] without a call")
		}
		var raw json.RawMessage
		if err := json.NewDecoder(strings.NewReader("{" + args)).Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, Call{Name: name, Arguments: argumentsText(raw)})
	}
	return out, nil
}
