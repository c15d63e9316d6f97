package engine

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wspec/wspec/spec/holdback"
	"github.com/wspec/wspec/weights/tokenizer"
)

// textStream turns a generation's tokens into streamed text on the caller's goroutine: the
// scheduler pushes tokens (push never blocks it), the caller flushes them into text, holds
// back what could still become a stop string, and cuts the text (and the tokens) at the first
// stop string, which is not part of the output.
type textStream struct {
	dec       *tokenizer.StreamDecoder
	stops     []string
	minTokens int  // a stop string counts once the token completing it is the minTokens-th or later
	include   bool // the stop string stays in the text
	onText    func(string)
	hold      int // how far back a stop string may start in text already passed on: the longest, less one

	mu      sync.Mutex
	pending []int
	wake    chan struct{}
	stopped atomic.Bool // a stop string was found: the scheduler should stop

	text        strings.Builder // everything decoded so far (up to the stop string when found)
	sent        int             // bytes of text given to onText
	ends        []int           // text length after each token
	kept        int             // tokens before the cut (all, when no stop string was found)
	matched     bool
	matchedStop string // the stop string that cut the text
}

func newTextStream(tok *tokenizer.Tokenizer, o GenerateOptions, onText func(string)) *textStream {
	ts := &textStream{dec: tokenizer.NewStreamDecoder(tok), stops: o.Stop, minTokens: o.MinTokens, include: o.IncludeStopStr,
		onText: onText, wake: make(chan struct{}, 1)}
	if o.KeepSpecialTokens {
		ts.dec.KeepSpecial(!o.NoSpecialTokenSpaces)
	}
	for _, s := range o.Stop {
		ts.hold = max(ts.hold, len(s)-1)
	}
	return ts
}

// push queues a token (on the scheduler's goroutine); false asks it to stop.
func (ts *textStream) push(tok int) bool {
	ts.mu.Lock()
	ts.pending = append(ts.pending, tok)
	ts.mu.Unlock()
	select {
	case ts.wake <- struct{}{}:
	default:
	}
	return !ts.stopped.Load()
}

// flush decodes the queued tokens and passes on the text that is settled; final releases
// what was held back.
func (ts *textStream) flush(final bool) {
	ts.mu.Lock()
	toks := ts.pending
	ts.pending = nil
	ts.mu.Unlock()
	for _, t := range toks {
		if ts.matched {
			break
		}
		ts.text.WriteString(ts.dec.Push(t))
		ts.ends = append(ts.ends, ts.text.Len())
		ts.kept = len(ts.ends)
		ts.cut()
	}
	if final && !ts.matched {
		ts.text.WriteString(ts.dec.Flush())
		if len(ts.ends) > 0 {
			ts.ends[len(ts.ends)-1] = ts.text.Len()
		}
		ts.cut()
	}
	upto := ts.text.Len()
	if !final && !ts.matched {
		// what could still become a stop string is held back (a prefix of one at the end)
		upto = max(ts.sent, upto-holdback.Any(ts.text.String(), ts.stops))
	}
	if upto > ts.sent {
		if ts.onText != nil {
			ts.onText(ts.text.String()[ts.sent:upto])
		}
		ts.sent = upto
	}
}

// cut looks for a stop string in the text not yet passed on (and what it may straddle) and,
// at the first one completed by the minTokens-th token or a later one, drops all after it (it
// too, unless include), keeping the tokens up to the one that completed it.
func (ts *textStream) cut() {
	if len(ts.stops) == 0 || ts.matched || len(ts.ends) < ts.minTokens {
		return
	}
	s := ts.text.String()
	from := max(0, ts.sent-ts.hold)
	at, end, which := -1, 0, ""
	for _, stop := range ts.stops {
		for i := from; i <= len(s)-len(stop); {
			j := strings.Index(s[i:], stop)
			if j < 0 || (at >= 0 && i+j >= at) {
				break
			}
			if k := ts.completedBy(i + j + len(stop)); k+1 >= ts.minTokens {
				at, end, ts.kept, which = i+j, i+j+len(stop), k+1, stop
				break
			}
			i += j + 1
		}
	}
	if at < 0 {
		return
	}
	ts.matched, ts.matchedStop = true, which
	ts.stopped.Store(true)
	if ts.include {
		at = end
	}
	ts.text.Reset()
	ts.text.WriteString(s[:at])
}

// completedBy is the index of the token whose text reaches byte end.
func (ts *textStream) completedBy(end int) int {
	k, _ := slices.BinarySearch(ts.ends, end)
	return min(k, len(ts.ends)-1)
}
