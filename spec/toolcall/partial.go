package toolcall

import (
	"encoding/json"
	"strings"
)

// Partial is a call as far as the model has written it, for streaming: its name once the
// name's string is complete, and its arguments' text so far, compacted as the whole call's
// arguments are (so the pieces streamed add up to Call.Arguments). Arguments written as a
// JSON string holding JSON, or before the name, are not streamed: Args stays "" and the call
// comes whole at its end.
type Partial struct {
	Name string // "" until known
	Args string // the arguments' compacted text so far
}

// Partials are the calls written so far in the reply's call text (after the marker).
func (s *Stream) Partials() []Partial {
	if !s.inCalls {
		return nil
	}
	text := s.calls.String()
	switch s.f.start {
	case "<tool_call>": // hermes: a JSON object in each block
		var out []Partial
		for {
			i := strings.Index(text, "<tool_call>")
			if i < 0 {
				return out
			}
			text = text[i+len("<tool_call>"):]
			body := text
			if j := strings.Index(text, "</tool_call>"); j >= 0 {
				body, text = text[:j], text[j:]
			}
			out = append(out, scanCalls(body)...)
		}
	case "[TOOL_CALLS]": // mistral v3: a JSON list (v11's name{arguments} comes whole)
		_, rest, _ := strings.Cut(text, "[TOOL_CALLS]")
		if t := strings.TrimSpace(rest); !strings.HasPrefix(t, "[") && !strings.HasPrefix(t, "{") {
			return nil
		}
		return scanCalls(rest)
	}
	return scanCalls(strings.TrimPrefix(strings.TrimSpace(text), "<|python_tag|>")) // llama3_json
}

// PartialRequired is Partials of a reply written under RequiredSchema.
func PartialRequired(text string) []Partial { return scanCalls(text) }

// PartialNamed is the call a reply written under NamedSchema makes so far: the text is its
// arguments.
func PartialNamed(name, text string) Partial {
	args, _ := compactPrefix(strings.TrimLeft(text, " \t\r\n"))
	return Partial{Name: name, Args: args}
}

// scanCalls finds the JSON objects of text, in order (those inside a list too, not those
// nested in them), and reads each one's "name" and "arguments" (or "parameters") as far as
// they are written.
func scanCalls(text string) []Partial {
	var out []Partial
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		p, end := scanCall(text[i:])
		out = append(out, p)
		if end < 0 {
			break
		}
		i += end
	}
	return out
}

// scanCall reads one object from its '{': the call as far as it goes, and where the object
// ends (-1: not yet).
func scanCall(obj string) (Partial, int) {
	var p Partial
	nameFirst := true
	i := 1
	for {
		i = skipBlank(obj, i)
		if i >= len(obj) {
			return p, -1
		}
		if obj[i] == '}' {
			return p, i
		}
		if obj[i] == ',' {
			i++
			continue
		}
		kEnd := stringEnd(obj, i)
		if kEnd < 0 {
			return p, -1
		}
		var key string
		if json.Unmarshal([]byte(obj[i:kEnd]), &key) != nil {
			return p, -1
		}
		i = skipBlank(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return p, -1
		}
		i = skipBlank(obj, i+1)
		if i >= len(obj) {
			return p, -1
		}
		vEnd := valueEnd(obj, i)
		switch key {
		case "name":
			if vEnd < 0 {
				return p, -1
			}
			json.Unmarshal([]byte(obj[i:vEnd]), &p.Name)
		case "arguments", "parameters":
			if p.Name == "" {
				nameFirst = false
			}
			if nameFirst && obj[i] == '{' {
				p.Args, _ = compactPrefix(obj[i:])
			}
		}
		if vEnd < 0 {
			return p, -1
		}
		i = vEnd
	}
}

func skipBlank(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}

// stringEnd is the index after the JSON string that starts at s[i] ('"'), -1 if not closed.
func stringEnd(s string, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd is the index after the JSON value that starts at s[i], -1 if it is not complete.
func valueEnd(s string, i int) int {
	if s[i] == '"' {
		return stringEnd(s, i)
	}
	if s[i] != '{' && s[i] != '[' {
		j := i
		for j < len(s) && strings.IndexByte(",}] \t\r\n", s[j]) < 0 {
			j++
		}
		if j == len(s) {
			return -1 // a number or literal may go on
		}
		return j
	}
	_, end := compactPrefix(s[i:])
	if end < 0 {
		return -1
	}
	return i + end
}

// compactPrefix compacts the object or list at the start of s as far as it is written (the
// whitespace outside strings dropped, as json.Compact drops it) and says where it ends (-1:
// not yet).
func compactPrefix(s string) (string, int) {
	var b strings.Builder
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			b.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
		b.WriteByte(c)
		if depth == 0 {
			return b.String(), i + 1
		}
	}
	return b.String(), -1
}
