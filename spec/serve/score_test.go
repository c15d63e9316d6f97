package serve

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/weights"
)

// Scoring a prompt as lm-evaluation-harness does (token ids, echo, logprobs 1, max_tokens 0)
// gives each prompt token's logprob after the ones before it: the first null, the others the
// reference model's (runtime/ref on the same weights) within 1e-3, and for the tokens the
// engine generated greedily their logprobs then; the text is the prompt's.
// prompt_logprobs gives the same numbers in vLLM's shape, with ranks, beside a generation.
func TestScorePrompt(t *testing.T) {
	f := specServer(t)
	res := f.generate(t, "Once upon a time", engine.GenerateOptions{MaxTokens: 6, Sampling: engine.Sampling{Logprobs: true, TopLogprobs: 1}})
	ids := append(append([]int(nil), res.PromptTokens...), res.Tokens...)
	var idList []string
	for _, id := range ids {
		idList = append(idList, strconv.Itoa(id))
	}
	body := `{"prompt": [` + strings.Join(idList, ",") + `], "echo": true, "logprobs": 1, "max_tokens": 0, "temperature": 0}`
	code, raw := f.post(t, "/v1/completions", body)
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	var rep struct {
		Choices []struct {
			Text     string
			Logprobs struct {
				Tokens        []string
				TokenLogprobs []*float64           `json:"token_logprobs"`
				TopLogprobs   []map[string]float64 `json:"top_logprobs"`
				TextOffset    []int                `json:"text_offset"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage usage
	}
	mustUnmarshal(t, string(raw), &rep)
	c := rep.Choices[0]
	lp := c.Logprobs
	if n := len(ids); len(lp.Tokens) != n || len(lp.TokenLogprobs) != n || len(lp.TopLogprobs) != n || len(lp.TextOffset) != n {
		t.Fatalf("%d tokens scored: %s", len(ids), raw)
	}
	if lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil || !strings.Contains(string(raw), `"token_logprobs":[null,`) {
		t.Errorf("the first token has logprobs: %s", raw)
	}
	if c.Text != f.e.Tokenizer().Decode(ids) || c.FinishReason != "length" || rep.Usage.CompletionTokens != 0 || rep.Usage.PromptTokens != len(ids) {
		t.Errorf("text %q, finish %q, usage %+v", c.Text, c.FinishReason, rep.Usage)
	}
	w, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	logits, _ := ref.NewLlamaState(w).Forward(ids)
	V := w.Cfg.Vocab
	for i := 1; i < len(ids); i++ {
		want, _, _ := kernelref.Logprobs(logits[(i-1)*V:i*V], ids[i], 0)
		if got := lp.TokenLogprobs[i]; got == nil || math.Abs(*got-float64(want)) > 1e-3 {
			t.Errorf("token %d: scored %v, the reference model %v", i, got, want)
		}
	}
	for i, g := range res.Logprobs { // generated greedily: the top token, with the same logprob
		got := lp.TokenLogprobs[len(res.PromptTokens)+i]
		if got == nil || math.Abs(*got-float64(g.Logprob)) > 2e-3 {
			t.Errorf("generated token %d: scored %v, generated with %v", i, got, g.Logprob)
		}
		top := lp.TopLogprobs[len(res.PromptTokens)+i]
		if _, ok := top[lp.Tokens[len(res.PromptTokens)+i]]; !ok || len(top) != 1 {
			t.Errorf("generated token %d %q is not the top one scored: %v", i, lp.Tokens[len(res.PromptTokens)+i], top)
		}
	}

	// vLLM's prompt_logprobs beside a generation, in completions and chat.
	code, raw = f.post(t, "/v1/completions", `{"prompt": "Once upon a time", "prompt_logprobs": 2, "max_tokens": 3, "temperature": 0}`)
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	var vrep struct {
		Choices []struct {
			Text           string
			PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs"`
		}
	}
	mustUnmarshal(t, string(raw), &vrep)
	pl := vrep.Choices[0].PromptLogprobs
	if len(pl) != len(res.PromptTokens) || pl[0] != nil || vrep.Choices[0].Text != f.generate(t, "Once upon a time", engine.GenerateOptions{MaxTokens: 3}).Text {
		t.Fatalf("prompt_logprobs for %d tokens: %s", len(res.PromptTokens), raw)
	}
	for i, m := range pl[1:] {
		tok := res.PromptTokens[i+1]
		e, ok := m[strconv.Itoa(tok)]
		want := lp.TokenLogprobs[i+1]
		if !ok || len(m) < 2 || len(m) > 3 || e.Rank < 1 || math.Abs(float64(e.Logprob)-*want) > 1e-4 {
			t.Errorf("prompt token %d (%d): %+v, echo's logprob %v", i+1, tok, m, *want)
		}
		for id, o := range m {
			if o.Logprob > e.Logprob && o.Rank >= e.Rank || (id != strconv.Itoa(tok) && o.Rank > 2) {
				t.Errorf("prompt token %d: rank %d at %v beside %s's %d at %v", i+1, e.Rank, e.Logprob, id, o.Rank, o.Logprob)
			}
		}
	}
	code, raw = f.post(t, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Once upon a time"}], "prompt_logprobs": 0, "max_tokens": 0}`)
	if code != 200 || !strings.Contains(string(raw), `"prompt_logprobs":[null,{`) || !strings.Contains(string(raw), `"completion_tokens":0`) {
		t.Errorf("chat scoring: %d %s", code, raw)
	}
	f.waitIdle(t)
}
