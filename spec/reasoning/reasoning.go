// Package reasoning splits a reasoning model's reply into its reasoning and its answer, as
// vLLM's reasoning parsers do (--reasoning-parser): qwen3 (the reply may open with <think>;
// reasoning runs to </think>) and deepseek_r1 (the chat template opens <think> in the prompt,
// so the reply is reasoning from its start, a leading <think> dropped, to </think>). A reply
// whose thinking never closes is reasoning to its end, whole and streamed alike.
package reasoning

import (
	"strings"

	"github.com/wspec/wspec/spec/holdback"
)

const (
	openTag  = "<think>"
	closeTag = "</think>"
)

// Parsers are the parsers' names, sorted.
func Parsers() []string { return []string{"deepseek_r1", "qwen3"} }

// Valid says whether name is a parser.
func Valid(name string) bool { return name == "qwen3" || name == "deepseek_r1" }

// Split reads a whole reply.
func Split(parser, text string) (reasoning, content string) {
	s := NewStream(parser)
	r1, c1 := s.Push(text)
	r2, c2 := s.Finish()
	return r1 + r2, c1 + c2
}

// Stream is one reply's split as its text arrives.
type Stream struct {
	state   int // before: the reply's start; thinking; answering
	pending string
	opened  bool // deepseek_r1: the reply is reasoning from its start
}

const (
	before = iota
	thinking
	answering
)

// NewStream starts a split with the named parser (see Valid).
func NewStream(parser string) *Stream { return &Stream{opened: parser == "deepseek_r1"} }

// Push takes new text and returns what can be sent now as reasoning and as content.
func (s *Stream) Push(text string) (reasoning, content string) {
	text = s.pending + text
	s.pending = ""
	for text != "" {
		switch s.state {
		case before:
			t := strings.TrimLeft(text, " \t\r\n")
			switch {
			case strings.HasPrefix(t, openTag):
				s.state, text = thinking, t[len(openTag):]
			case t == "" || strings.HasPrefix(openTag, t):
				s.pending = text // blank, or maybe <think> cut short
				return reasoning, content
			case s.opened:
				s.state = thinking
			default:
				s.state = answering
			}
		case thinking:
			if i := strings.Index(text, closeTag); i >= 0 {
				reasoning += text[:i]
				s.state, text = answering, text[i+len(closeTag):]
				continue
			}
			keep := holdback.Partial(text, closeTag)
			s.pending = text[len(text)-keep:]
			return reasoning + text[:len(text)-keep], content
		case answering:
			return reasoning, content + text
		}
	}
	return reasoning, content
}

// Finish ends the reply: what is still held back.
func (s *Stream) Finish() (reasoning, content string) {
	rest := s.pending
	s.pending = ""
	if s.state == thinking || (s.state == before && s.opened) {
		return rest, ""
	}
	return "", rest
}
