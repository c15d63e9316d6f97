package serve

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/weights/tokenizer"
)

// errCancelled says a request's generations were cancelled: by its client leaving (then
// nothing is sent) or by the server's drain running out of time (then a 503 is).
var errCancelled = errors.New("cancelled")

// choice is one generation of a request: prompt p's i-th choice, at index p*n+i.
type choice struct {
	index, prompt int
	res           *engine.Result
}

// run generates every choice of rq concurrently (the engine batches them). onText gets each
// choice's streamed text and onDone its result as it ends (both may be nil); calls for one
// choice come from one goroutine, for different choices concurrently. It returns the
// choices in index order, or the first error (the other choices are then cancelled), or
// errCancelled when ctx ended them.
func (s *Server) run(ctx context.Context, rq *request, onText func(c *choice, text string), onDone func(c *choice)) ([]*choice, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.hardStop, cancel) // the drain ran out of time
	defer stop()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	out := make([]*choice, 0, len(rq.prompts)*rq.n)
	maxTokens := make([]int, len(rq.prompts))
	for p, r := range rq.prompts {
		if maxTokens[p] = r.MaxTokens(); maxTokens[p] == 0 {
			maxTokens[p] = s.maxSeq - len(r.Prompt) // unset: the rest of the context
		}
	}
	s.metrics.request(rq.n, maxTokens)
	for p, prompt := range rq.prompts {
		for i := 0; i < rq.n; i++ {
			c := &choice{index: p*rq.n + i, prompt: p}
			out = append(out, c)
			start, last := time.Now(), time.Time{}
			onText := func(text string) {
				now := time.Now()
				if !last.IsZero() {
					s.metrics.itl.Observe(now.Sub(last).Seconds())
				}
				last = now
				if onText != nil {
					onText(c, text)
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.e.Run(ctx, prompt.WithChoice(i, onText))
				if err == nil && res.Finish == spec.FinishCancelled {
					err = errCancelled
				}
				if res != nil {
					s.metrics.finished(res, time.Since(start))
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil || errors.Is(firstErr, errCancelled) {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				c.res = res
				if onDone != nil {
					onDone(c)
				}
			}()
		}
	}
	wg.Wait()
	if firstErr != nil && !errors.Is(firstErr, errCancelled) {
		return nil, s.requestError(rq, firstErr)
	}
	return out, firstErr
}

// finishReason is OpenAI's finish_reason for an engine's: the context filling up is "length".
func finishReason(f spec.FinishReason) string {
	if f == spec.FinishContextFull {
		return "length"
	}
	return string(f)
}

// tokenText is a token's text as a client sees it (a SentencePiece "▁" is a space) and its
// bytes: a byte-fallback token "<0xE2>" is that byte (its text U+FFFD).
func tokenText(tok *tokenizer.Tokenizer, id int) (string, []int) {
	var b []byte
	if p := tok.Piece(id); len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		var v byte
		for _, c := range p[3:5] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'A' && c <= 'F':
				v |= byte(c - 'A' + 10)
			case c >= 'a' && c <= 'f':
				v |= byte(c - 'a' + 10)
			}
		}
		b = []byte{v}
	}
	d := tokenizer.NewStreamDecoder(tok)
	text := d.Push(id) + d.Flush()
	if b == nil {
		b = []byte(text)
	}
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return text, ints
}

// chatLogprobsOf converts a result's logprobs to chat's (nil when none were asked for).
func (s *Server) chatLogprobsOf(res *engine.Result, want bool) *chatLogprobs {
	if !want {
		return nil
	}
	lp := &chatLogprobs{Content: []chatTokenLogprob{}}
	for _, t := range res.Logprobs {
		text, b := tokenText(s.tok, t.Token)
		e := chatTokenLogprob{Token: text, Logprob: t.Logprob, Bytes: b, TopLogprobs: []chatTopLogprob{}}
		for _, top := range t.Top {
			tt, tb := tokenText(s.tok, top.Token)
			e.TopLogprobs = append(e.TopLogprobs, chatTopLogprob{Token: tt, Logprob: top.Logprob, Bytes: tb})
		}
		lp.Content = append(lp.Content, e)
	}
	return lp
}

// completionLogprobsOf converts logprobs to the completions' parallel lists, with text
// offsets from off.
func (s *Server) completionLogprobsOf(lps []engine.TokenLogprob, off int) *completionLogprobs {
	lp := &completionLogprobs{TextOffset: []int{}, TokenLogprobs: []*float32{}, Tokens: []string{}, TopLogprobs: []map[string]float32{}}
	for _, t := range lps {
		text, _ := tokenText(s.tok, t.Token)
		lp.TextOffset = append(lp.TextOffset, off)
		off += len(text)
		lp.Tokens = append(lp.Tokens, text)
		lp.TokenLogprobs = append(lp.TokenLogprobs, &t.Logprob)
		lp.TopLogprobs = append(lp.TopLogprobs, s.topOf(t.Top))
	}
	return lp
}

// topOf is a position's likeliest tokens as completions list them: by text, the likelier of
// two tokens of one text.
func (s *Server) topOf(top []engine.TopLogprob) map[string]float32 {
	m := map[string]float32{}
	for _, tl := range top {
		tt, _ := tokenText(s.tok, tl.Token)
		if _, dup := m[tt]; !dup {
			m[tt] = tl.Logprob
		}
	}
	return m
}
