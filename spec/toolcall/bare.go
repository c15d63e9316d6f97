package toolcall

import (
	"encoding/json"
	"strings"
)

// Calls written without the parser's marker (format.bare): Qwen2.5-Coder, asked with tools,
// answers a call as a ```json fenced object {"name": ..., "arguments": {...}}, or as the bare
// object, not inside <tool_call>; llama.cpp's Hermes parser takes those as calls, vLLM's
// does not. A reply that opens so is held back until it ends, then read as calls if it is
// nothing else; a fence of another language, or text first, is content from the start.

// bareOpening decides, at the reply's first text, whether it may be bare calls (true: hold it
// back). It sets s.decided once that is known; until then the caller holds the text.
func (s *Stream) bareOpening(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	switch {
	case t == "":
		return false
	case strings.HasPrefix(t, "{"):
		s.decided = true
		return true
	case strings.HasPrefix(t, "```"):
		nl := strings.IndexByte(t, '\n')
		if nl < 0 {
			return false // the fence's language is not known yet
		}
		s.decided = true
		info := strings.TrimSpace(t[3:nl])
		return info == "" || info == "json"
	case strings.HasPrefix("```", t):
		return false // maybe a fence, cut short
	}
	s.decided = true
	return false
}

// bareCalls reads a whole reply that is one or more call objects (or lists of them), fenced
// or not, each with a name and its arguments (or parameters) as an object.
func bareCalls(text string) ([]Call, bool) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") {
		nl := strings.IndexByte(t, '\n')
		if nl < 0 || !strings.HasSuffix(t, "```") || len(t) < nl+4 {
			return nil, false
		}
		t = t[nl+1 : len(t)-3]
	}
	dec := json.NewDecoder(strings.NewReader(t))
	var out []Call
	for dec.More() {
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return nil, false
		}
		var objs []map[string]json.RawMessage
		if json.Unmarshal(raw, &objs) != nil {
			var one map[string]json.RawMessage
			if json.Unmarshal(raw, &one) != nil {
				return nil, false
			}
			objs = append(objs, one)
		}
		for _, o := range objs {
			var name string
			args, ok := o["arguments"]
			if !ok {
				args, ok = o["parameters"]
			}
			if len(o) != 2 || !ok || json.Unmarshal(o["name"], &name) != nil || name == "" || !isObject(args) {
				return nil, false
			}
			out = append(out, Call{Name: name, Arguments: argumentsText(args)})
		}
	}
	if strings.TrimSpace(t[dec.InputOffset():]) != "" {
		return nil, false
	}
	return out, len(out) > 0
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil
}
