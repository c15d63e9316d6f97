package serve

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/wspec/wspec/spec/toolcall"
)

// The Messages API's replies: a message with its content blocks (thinking, text, tool_use)
// and stop_reason (end_turn, max_tokens, stop_sequence, tool_use), or streamed as Anthropic's
// events: message_start; per block content_block_start, its deltas (text_delta, thinking_delta,
// input_json_delta), content_block_stop; message_delta with the stop_reason and usage;
// message_stop.

type messagesReplier struct {
	s     *Server
	id    string
	req   *messagesRequest
	out   *chatOutput
	input int // prompt tokens

	mu        sync.Mutex
	blocks    []map[string]any
	open      string      // the kind of the block streaming now ("" none): text or thinking
	useBlocks map[int]int // call n's place in blocks
	finish    *choice
}

func (rp *messagesReplier) message(content []map[string]any, stop, stopSeq any, outTokens int) map[string]any {
	if content == nil {
		content = []map[string]any{}
	}
	return map[string]any{"id": rp.id, "type": "message", "role": "assistant", "model": rp.s.name, "content": content,
		"stop_reason": stop, "stop_sequence": stopSeq,
		"usage": map[string]int{"input_tokens": rp.input, "output_tokens": outTokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
}

func (rp *messagesReplier) start(sw *sseWriter) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	sw.send(event{"type": "message_start", "message": rp.message(nil, nil, nil, 0)})
}

func (rp *messagesReplier) text(sw *sseWriter, _ *choice, text string) {
	thought, content, calls := rp.out.push(text)
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.add(sw, thought, content, calls)
	rp.out.writing(func(n int, name, args string) { rp.toolUse(sw, n, name, args, false) })
}

// toolUse streams what call n adds: its tool_use block once its name is known, its input's
// JSON as it grows (input_json_delta), and when whole, the block's stop (sw nil: builds the
// block alone).
func (rp *messagesReplier) toolUse(sw *sseWriter, n int, name, args string, whole bool) {
	_, more := rp.out.callDelta(n, args)
	if rp.useBlocks == nil {
		rp.useBlocks = map[int]int{}
	}
	idx, ok := rp.useBlocks[n]
	if !ok {
		rp.close(sw)
		b := map[string]any{"type": "tool_use", "id": "toolu_" + randomID(), "name": name, "input": map[string]any{}}
		idx = len(rp.blocks)
		rp.blocks, rp.useBlocks[n] = append(rp.blocks, b), idx
		if sw != nil {
			sw.send(event{"type": "content_block_start", "index": idx, "content_block": clone(b)})
		}
	}
	if more != "" && sw != nil {
		sw.send(event{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": more}})
	}
	if !whole {
		return
	}
	input := json.RawMessage(args)
	if !json.Valid(input) {
		input = json.RawMessage("{}")
	}
	rp.blocks[idx]["input"] = input
	if sw != nil {
		sw.send(event{"type": "content_block_stop", "index": idx})
	}
}

// add streams new thinking, text and calls (sw nil: builds the blocks alone).
func (rp *messagesReplier) add(sw *sseWriter, thought, content string, calls []toolcall.Call) {
	if thought != "" {
		rp.delta(sw, "thinking", thought)
	}
	if content != "" {
		rp.delta(sw, "text", content)
	}
	rp.out.done(calls, func(n int, name, args string) { rp.toolUse(sw, n, name, args, true) })
}

func (rp *messagesReplier) delta(sw *sseWriter, kind, text string) {
	if rp.open != kind {
		rp.close(sw)
		b := map[string]any{"type": kind, kind: ""}
		if kind == "thinking" {
			b["signature"] = ""
		}
		rp.blocks = append(rp.blocks, b)
		rp.open = kind
		if sw != nil {
			sw.send(event{"type": "content_block_start", "index": len(rp.blocks) - 1, "content_block": clone(b)})
		}
	}
	b := rp.blocks[len(rp.blocks)-1]
	b[kind] = b[kind].(string) + text
	if sw != nil {
		sw.send(event{"type": "content_block_delta", "index": len(rp.blocks) - 1, "delta": map[string]any{"type": kind + "_delta", kind: text}})
	}
}

func (rp *messagesReplier) close(sw *sseWriter) {
	if rp.open == "" {
		return
	}
	if sw != nil {
		sw.send(event{"type": "content_block_stop", "index": len(rp.blocks) - 1})
	}
	rp.open = ""
}

func (rp *messagesReplier) end(sw *sseWriter, ch *choice) {
	thought, content, calls := rp.out.finish()
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.add(sw, thought, content, calls)
	rp.close(sw)
	rp.finish = ch
}

// stop is the stop_reason and stop_sequence.
func (rp *messagesReplier) stop() (string, any) {
	for _, b := range rp.blocks {
		if b["type"] == "tool_use" {
			return "tool_use", nil
		}
	}
	switch {
	case rp.finish == nil:
		return "end_turn", nil
	case finishReason(rp.finish.res.Finish) == "length":
		return "max_tokens", nil
	case rp.finish.res.StopString != "":
		return "stop_sequence", rp.finish.res.StopString
	}
	return "end_turn", nil
}

// usageChunk is the stream's end: message_delta (the stop_reason, the usage), message_stop.
func (rp *messagesReplier) usageChunk(u usage) any {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	reason, seq := rp.stop()
	return multiEvent{
		event{"type": "message_delta", "delta": map[string]any{"stop_reason": reason, "stop_sequence": seq},
			"usage": map[string]int{"output_tokens": u.CompletionTokens}},
		event{"type": "message_stop"},
	}
}

func (rp *messagesReplier) whole(choices []*choice, u usage) any {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	ch := choices[0]
	t1, c1, calls := rp.out.push(ch.res.Text)
	t2, c2, rest := rp.out.finish()
	rp.add(nil, t1+t2, c1+c2, append(calls, rest...))
	rp.finish = ch
	reason, seq := rp.stop()
	return rp.message(rp.blocks, reason, seq, u.CompletionTokens)
}

func (rp *messagesReplier) writeError(w http.ResponseWriter, err error) { writeAnthropicError(w, err) }

func (rp *messagesReplier) errorEvent(err error) any {
	e := event{}
	for k, v := range anthropicErrorBody(asAPIError(err)) {
		e[k] = v
	}
	return e
}

// multiEvent is several events sent in order.
type multiEvent []event
