package serve

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
)

// openers are story beginnings of mixed lengths (1 to about 60 tokens).
var openers = []string{
	"Once",
	"Once upon a time",
	"The little dog",
	"Tom and Lily went to the park. They",
	"One day, a big bear found a shiny red ball in the forest. He",
	"There was a girl named Sue who loved to paint. Every morning she took her brushes and her paper to the garden, where the flowers were bright and the sun was warm. One day",
	"Max had a toy car. It was blue and fast.",
	"In a small house by the sea lived an old cat who liked to sleep in the sun all day long, and at night he",
}

// streamed sends a streamed completion and returns its text (its choices' texts in order,
// joined by "|") and the finish reason of its last choice.
func (f *fixture) streamed(t testing.TB, ctx context.Context, body map[string]any) (string, string) {
	t.Helper()
	body["stream"] = true
	events, done := f.stream(t, ctx, "/v1/completions", mustJSON(t, body))
	if !done {
		t.Errorf("%v: the stream ended without [DONE]", body)
	}
	var texts []string
	finish := ""
	for _, ev := range events {
		var ch completionReply
		mustUnmarshal(t, ev, &ch)
		for _, c := range ch.Choices {
			for len(texts) <= c.Index {
				texts = append(texts, "")
			}
			texts[c.Index] += c.Text
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	return strings.Join(texts, "|"), finish
}

// sendAll sends the bodies alone, one after the other, then all at once; each must get the
// same text both ways. It returns the texts.
func (f *fixture) sendAll(t *testing.T, bodies []map[string]any) []string {
	t.Helper()
	ctx := context.Background()
	clone := func(b map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range b {
			c[k] = v
		}
		return c
	}
	alone := make([]string, len(bodies))
	for i, b := range bodies {
		alone[i], _ = f.streamed(t, ctx, clone(b))
	}
	together := make([]string, len(bodies))
	finish := make([]string, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			together[i], finish[i] = f.streamed(t, ctx, clone(b))
		}()
	}
	wg.Wait()
	for i := range bodies {
		if together[i] != alone[i] || (finish[i] != "length" && finish[i] != "stop") {
			t.Errorf("request %d %v: in the batch %q (%s)\nalone %q", i, bodies[i], together[i], finish[i], alone[i])
		}
	}
	return alone
}

// 32 concurrent streamed requests (greedy, mixed prompt lengths, speculation off for some,
// another k for others) each get exactly the text they get alone, and afterwards the page
// pool is empty.
func TestConcurrentStreams(t *testing.T) {
	f := specServer(t)
	var bodies []map[string]any
	for i := 0; i < 32; i++ {
		b := map[string]any{"model": model, "prompt": openers[i%len(openers)], "max_tokens": 8 + i%9, "temperature": 0}
		switch i % 4 {
		case 1:
			b["speculative"] = map[string]any{"num_speculative_tokens": 0}
		case 2:
			b["speculative"] = map[string]any{"num_speculative_tokens": 2}
		case 3:
			b["speculative"] = map[string]any{"num_speculative_tokens": 3, "fixed": true}
		}
		bodies = append(bodies, b)
	}
	t0 := time.Now()
	f.sendAll(t, bodies)
	t.Logf("32 requests alone then together in %v", time.Since(t0).Round(time.Millisecond))
	f.waitIdle(t)
}

// Sampled requests with a seed give the same text alone and in a batch (n choices too).
func TestSeededBatch(t *testing.T) {
	f := specServer(t)
	var bodies []map[string]any
	for i := 0; i < 8; i++ {
		b := map[string]any{"model": model, "prompt": openers[i], "max_tokens": 10, "temperature": 1.0, "top_p": 0.9, "seed": 100 + i}
		if i%2 == 1 {
			b["n"] = 2
			b["top_k"] = 40
			b["speculative"] = map[string]any{"num_speculative_tokens": 2, "fixed": true}
		}
		bodies = append(bodies, b)
	}
	f.sendAll(t, bodies)
	f.waitIdle(t)
}

// A client that leaves mid-stream cancels its generation at once: its pages come back, the
// request is counted as aborted, and the server goes on serving. So does one that gives up
// waiting for a whole reply.
func TestCancelMidStream(t *testing.T) {
	f := specServer(t)
	aborted := f.metric(t, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="stories15M"}`)
	ctx, cancel := context.WithCancel(context.Background())
	body := mustJSON(t, map[string]any{"prompt": "Once upon a time", "max_tokens": 200, "temperature": 0, "stream": true})
	req := f.request(t, ctx, "/v1/completions", body)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	events := 0
	for events < 4 { // read a few events
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		if buf[0] == '\n' {
			events++
		}
	}
	if st := f.e.Stats(); st.Running != 1 || st.PagesUsed == 0 {
		t.Fatalf("mid-stream the engine holds %+v", st)
	}
	cancel()
	resp.Body.Close()
	t0 := time.Now()
	f.waitIdle(t)
	t.Logf("pages freed %v after the client left", time.Since(t0).Round(time.Millisecond))
	deadline := time.Now().Add(hangGuard)
	for f.metric(t, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="stories15M"}`) != aborted+1 {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled request was not counted as aborted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A whole (not streamed) request whose client gives up is cancelled too: the client
	// leaves once the engine runs it, however fast the machine.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for f.e.Stats().Running == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	req = f.request(t, ctx, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Tell me a story."}], "temperature": 0}`)
	if _, err := f.ts.Client().Do(req); err == nil {
		t.Fatal("a chat until the end of the context finished before its client left")
	}
	f.waitIdle(t)
	if text, finish := f.streamed(t, context.Background(), map[string]any{"prompt": "Once", "max_tokens": 3}); finish != "length" || text == "" {
		t.Fatalf("after the cancel: %q %s", text, finish)
	}
}

// A flood beyond the page budget (16 pages of 16 tokens: one full context) queues, preempts,
// and every request completes with the text it gets alone; the pool ends empty.
func TestFloodBeyondPages(t *testing.T) {
	f := load(t, "small-pool", engine.Options{Pages: 16, Speculative: &spec.Config{Mode: "ngram", NumSpeculativeTokens: 3}}, Config{APIKey: testKey})
	if st := f.e.Stats(); st.Pages != 16 {
		t.Fatalf("pool of %d pages, want 16", st.Pages)
	}
	var bodies []map[string]any
	for i := 0; i < 12; i++ {
		bodies = append(bodies, map[string]any{"model": model, "prompt": openers[i%len(openers)], "max_tokens": 40, "temperature": 0})
	}
	before := f.metric(t, `vllm:num_preemptions_total{engine="0",model_name="stories15M"}`)
	f.sendAll(t, bodies)
	preempted := f.metric(t, `vllm:num_preemptions_total{engine="0",model_name="stories15M"}`) - before
	t.Logf("%v preemptions", preempted)
	if preempted == 0 {
		t.Error("the flood caused no preemption: the pool is not the bound the test means")
	}
	f.waitIdle(t)
}

// request makes an authorized POST with ctx.
func (f *fixture) request(t testing.TB, ctx context.Context, path, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	return req
}
