package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// After Close every call is an error wrapping ErrClosed (none crashes), and closing twice is
// harmless.
func TestUseAfterClose(t *testing.T) {
	e, err := Load(storiesDir, Options{Device: testDevice(t), Speculative: &spec.Config{Mode: "ngram", NumSpeculativeTokens: 3}})
	if err != nil {
		t.Fatal(err)
	}
	generate(t, e, "Once upon a time", GenerateOptions{MaxTokens: 4})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Generate(context.Background(), "Once upon a time", GenerateOptions{MaxTokens: 4}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Generate after Close: %v", err)
	}
	if _, err := e.BenchDecode(context.Background(), "Once upon a time", 2); !errors.Is(err, ErrClosed) {
		t.Fatalf("BenchDecode after Close: %v", err)
	}
	if e.Info().Dir != storiesDir {
		t.Fatalf("Info after Close: %+v", e.Info())
	}
}

// Close cancels a running generation within a step and waits for it: the generation returns
// its tokens so far with FinishCancelled.
func TestCloseCancelsRunning(t *testing.T) {
	e, err := Load(storiesDir, Options{Device: testDevice(t)})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	done := make(chan *Result)
	go func() {
		res, err := e.Generate(context.Background(), "Once upon a time", GenerateOptions{
			OnText: func(string) { once.Do(func() { close(started) }) }})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	e.Close()
	select {
	case res := <-done:
		if res == nil || res.Finish != spec.FinishCancelled || len(res.Tokens) == 0 || len(res.Tokens) > 200 {
			t.Fatalf("cancelled by Close: %+v", res)
		}
	case <-time.After(3 * time.Minute): // a hang guard: Close cancels within one step
		t.Fatal("Generate still running 3 minutes after Close returned")
	}
}

// Cancelling the context stops generation within one step (k+1 tokens at most past the
// cancel), returns the tokens so far with FinishCancelled, and frees the sequence's pages.
func TestCancel(t *testing.T) {
	e := stories(t, &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4})
	for _, spec := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		res, err := e.Generate(ctx, "Once upon a time", GenerateOptions{NoSpeculation: !spec, OnText: func(s string) {
			if n++; n == 10 {
				cancel()
			}
		}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if res.Finish != "cancelled" || len(res.Tokens) < 10 || len(res.Tokens) > 10+5 {
			t.Fatalf("speculation %v: cancelled after 10 pieces of text: %d tokens, finish %q", spec, len(res.Tokens), res.Finish)
		}
		if used := e.Stats().PagesUsed; used != 0 {
			t.Fatalf("speculation %v: %d pages in use after a cancelled generation", spec, used)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := e.Generate(ctx, "Once upon a time", GenerateOptions{}); err != nil || res.Finish != "cancelled" || len(res.Tokens) != 0 {
		t.Fatalf("already cancelled: %+v, %v", res, err)
	}
}

// Finish reasons: "length" at MaxTokens, "context_full" when prompt and output fill the
// context (unset MaxTokens, or one beyond the room), "stop" at an end token, which is not
// in the output.
func TestFinishReasons(t *testing.T) {
	e := stories(t, nil)
	long := strings.Repeat("Lily had a dog. ", 40) // 241 tokens of the 256
	res := generate(t, e, long, GenerateOptions{})
	if res.Finish != spec.FinishContextFull || len(res.PromptTokens)+len(res.Tokens) != 256 {
		t.Fatalf("unset max tokens: finish %q, %d + %d tokens", res.Finish, len(res.PromptTokens), len(res.Tokens))
	}
	res = generate(t, e, long, GenerateOptions{MaxTokens: 100})
	if res.Finish != spec.FinishContextFull || len(res.PromptTokens)+len(res.Tokens) != 256 {
		t.Fatalf("max tokens past the context: finish %q, %d + %d tokens", res.Finish, len(res.PromptTokens), len(res.Tokens))
	}
	// stop: "girl" as an end token, in a copy of the model.
	dir := copyModel(t)
	girl, ok := e.Tokenizer().TokenID("▁girl")
	if !ok {
		t.Fatal("no ▁girl token")
	}
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"bos_token_id": 1, "eos_token_id": [1, 2, `+strconv.Itoa(girl)+`]}`), 0o644)
	e2, err := Load(dir, Options{Device: testDevice(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	res = generate(t, e2, "Once upon a time", GenerateOptions{MaxTokens: 50})
	if res.Finish != spec.FinishStop || res.Text != ", there was a little" {
		t.Fatalf("end token: finish %q, text %q", res.Finish, res.Text)
	}
	// ignore_eos: the same text goes on past "girl" to max_tokens.
	res = generate(t, e2, "Once upon a time", GenerateOptions{MaxTokens: 50, IgnoreEOS: true})
	if res.Finish != spec.FinishLength || len(res.Tokens) != 50 || !strings.HasPrefix(res.Text, ", there was a little girl") {
		t.Fatalf("ignore_eos: finish %q, %d tokens, text %q", res.Finish, len(res.Tokens), res.Text)
	}
}

// Four goroutines generating on one engine, three prompts each, greedy and seeded sampling,
// with and without speculation, get exactly what each gets alone (run under -race).
func TestConcurrentGenerate(t *testing.T) {
	e := stories(t, &spec.Config{Mode: "ngram", NumSpeculativeTokens: 3})
	type job struct {
		prompt string
		o      GenerateOptions
	}
	var jobs []job
	for i, p := range []string{"Once upon a time", "Tom had a red ball", "The cat sat"} {
		jobs = append(jobs, job{p, GenerateOptions{MaxTokens: 12, NoSpeculation: i%2 == 0}},
			job{p, GenerateOptions{MaxTokens: 12, Sampling: Sampling{Temperature: 0.9, TopP: 0.9, Seed: uint64(i)}}})
	}
	want := make([][]int, len(jobs))
	for i, j := range jobs {
		want[i] = generate(t, e, j.prompt, j.o).Tokens
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(jobs))
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				j := jobs[(i+g)%len(jobs)]
				res, err := e.Generate(context.Background(), j.prompt, j.o)
				if err != nil {
					errs <- err
					return
				}
				if w := want[(i+g)%len(jobs)]; !slices.Equal(res.Tokens, w) {
					errs <- fmt.Errorf("goroutine %d, %q %+v: %v, alone %v", g, j.prompt, j.o, res.Tokens, w)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if used := e.Stats().PagesUsed; used != 0 {
		t.Fatalf("%d pages in use after the generations", used)
	}
}

// A model whose final norm is NaN is reported as such ("NaN logits at position p"), never
// turned into a token id.
func TestNaNLogits(t *testing.T) {
	dir := copyModel(t)
	ck, err := weights.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ts []weights.Tensor
	for _, name := range ck.Names() {
		tn, _ := ck.Tensor(name)
		tn.Data = slices.Clone(tn.Data)
		if name == weights.NormTensorName {
			v := make([]float32, tn.Shape[0])
			for i := range v {
				v[i] = float32(nanValue())
			}
			tn = weights.F32Tensor(name, tn.Shape, v)
		}
		ts = append(ts, tn)
	}
	ck.Close()
	if err := weights.WriteSafeTensors(filepath.Join(dir, weights.SingleFileName), ts, nil); err != nil {
		t.Fatal(err)
	}
	e, err := Load(dir, Options{Device: testDevice(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Generate(context.Background(), "Once upon a time", GenerateOptions{MaxTokens: 4})
	if err == nil || !strings.Contains(err.Error(), "NaN logits at position 4") {
		t.Fatalf("NaN weights: %v", err)
	}
}

// Loading and closing 4 engines (each with its own device) grows the process by less than
// 20 MB after the first: Close frees the model, the drafter and the device.
func TestLoadCloseMemory(t *testing.T) {
	rss := func() int64 {
		debug.FreeOSMemory()
		b, err := os.ReadFile("/proc/self/statm")
		if err != nil && goruntime.GOOS == "linux" {
			t.Fatalf("no /proc/self/statm: %v", err)
		} else if err != nil {
			t.Skipf("resident memory is read from /proc/self/statm, which %s lacks", goruntime.GOOS)
		}
		f := strings.Fields(string(b))
		pages, _ := strconv.ParseInt(f[1], 10, 64)
		return pages * int64(os.Getpagesize())
	}
	var first int64
	for i := 0; i < 4; i++ {
		e, err := Load(storiesDir, Options{Speculative: &spec.Config{Mode: "draft_model", NumSpeculativeTokens: 2, Model: storiesDir}})
		if err != nil {
			t.Fatal(err)
		}
		generate(t, e, "Once upon a time", GenerateOptions{MaxTokens: 3})
		e.Close()
		if i == 0 {
			first = rss()
			continue
		}
		grew := rss() - first
		t.Logf("engine %d: +%d MB", i+1, grew>>20)
		if grew > 20<<20 {
			t.Fatalf("after %d engines the process grew by %d MB since the first", i+1, grew>>20)
		}
	}
}

func nanValue() float64 { var z float64; return z / z }
