package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// series names a metric of the main server (its labels as /metrics prints them).
func series(name string) string { return name + `{engine="0",model_name="stories15M"}` }

// /metrics shows the speculative counters moving during a speculative request, and the
// request's tokens, latencies and KV use.
func TestMetricsMove(t *testing.T) {
	f := specServer(t)
	draftTokens := series("vllm:spec_decode_num_draft_tokens_total")
	accepted := series("vllm:spec_decode_num_accepted_tokens_total")
	drafts := series("vllm:spec_decode_num_drafts_total")
	pos0 := `vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="stories15M",position="0"}`
	genTokens := series("vllm:generation_tokens_total")
	ttftCount := `vllm:time_to_first_token_seconds_count{engine="0",model_name="stories15M"}`
	before := map[string]float64{}
	for _, s := range []string{draftTokens, accepted, drafts, pos0, genTokens, ttftCount} {
		before[s] = f.metric(t, s)
	}

	// A repetitive prompt: the ngram drafter finds its continuation in it, and fixed k 4
	// drafts every step it can.
	prompt := strings.Repeat("The cat sat on the mat. ", 6) + "The cat"
	body := mustJSON(t, map[string]any{"prompt": prompt, "max_tokens": 64, "temperature": 0, "stream": true,
		"speculative": map[string]any{"num_speculative_tokens": 4, "fixed": true}})
	resp, err := f.ts.Client().Do(f.request(t, context.Background(), "/v1/completions", body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Mid-stream: after 12 events, drafts have been verified and the request holds pages. (The
	// counters move when a step ends, after its tokens are sent: a step emits at most k+1 = 5
	// tokens, so by event 12 a step after the first verify step has sent its tokens.)
	buf := make([]byte, 1)
	for lines := 0; lines < 24; {
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		if buf[0] == '\n' {
			lines++
		}
	}
	mid := f.metric(t, draftTokens)
	kv := f.metric(t, series("vllm:kv_cache_usage_perc"))
	running := f.metric(t, series("vllm:num_requests_running"))
	rest, _ := io.ReadAll(resp.Body)
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("the stream did not end with [DONE]: %q", rest)
	}
	if mid <= before[draftTokens] {
		t.Errorf("draft tokens: %v before, %v mid-stream: not moving", before[draftTokens], mid)
	}
	if kv <= 0 || running != 1 {
		t.Errorf("mid-stream: kv_cache_usage_perc %v, num_requests_running %v", kv, running)
	}
	after := map[string]float64{}
	for s := range before {
		after[s] = f.metric(t, s)
	}
	t.Logf("draft tokens %v -> %v -> %v, accepted %v, drafts %v, accepted at position 0: %v",
		before[draftTokens], mid, after[draftTokens], after[accepted]-before[accepted], after[drafts]-before[drafts], after[pos0]-before[pos0])
	if after[accepted] <= before[accepted] || after[pos0] <= before[pos0] || after[drafts] <= before[drafts] {
		t.Errorf("speculative counters did not move: before %v after %v", before, after)
	}
	if after[genTokens]-before[genTokens] != 64 || after[ttftCount] != before[ttftCount]+1 {
		t.Errorf("generation tokens +%v (want 64), time-to-first-token samples +%v (want 1)", after[genTokens]-before[genTokens], after[ttftCount]-before[ttftCount])
	}
	if f.metric(t, series("vllm:kv_cache_usage_perc")) != 0 {
		t.Error("KV cache still in use after the request")
	}
	// The Prometheus text format, with the vllm: names.
	r, err := http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	text, _ := io.ReadAll(r.Body)
	for _, name := range []string{"vllm:num_requests_waiting", "vllm:prompt_tokens_total", "vllm:inter_token_latency_seconds_bucket",
		"vllm:num_preemptions_total", "vllm:e2e_request_latency_seconds_sum", "# TYPE vllm:time_to_first_token_seconds histogram"} {
		if !strings.Contains(string(text), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// The per-request series count a request with n 2: its n once, its max_tokens once, and each
// choice's prompt and generated tokens and phase times; vllm:cache_config_info names the KV
// cache's settings.
func TestMetricsPerRequest(t *testing.T) {
	f := specServer(t)
	count := func(name string) float64 {
		return f.metric(t, `vllm:`+name+`_count{engine="0",model_name="stories15M"}`)
	}
	sum := func(name string) float64 { return f.metric(t, `vllm:`+name+`_sum{engine="0",model_name="stories15M"}`) }
	names := []string{"request_params_n", "request_params_max_tokens", "request_prompt_tokens", "request_generation_tokens",
		"request_prefill_time_seconds", "request_decode_time_seconds", "request_inference_time_seconds"}
	before, beforeSum := map[string]float64{}, map[string]float64{}
	for _, n := range names {
		before[n], beforeSum[n] = count(n), sum(n)
	}
	res := f.do(t, "POST", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 7, "n": 2, "temperature": 0, "ignore_eos": true}`, nil)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	want := map[string][2]float64{ // count, sum added (sum -1: any positive)
		"request_params_n": {1, 2}, "request_params_max_tokens": {1, 7}, "request_prompt_tokens": {2, 10},
		"request_generation_tokens": {2, 14}, "request_prefill_time_seconds": {2, -1}, "request_decode_time_seconds": {2, -1},
		"request_inference_time_seconds": {2, -1},
	}
	for _, n := range names {
		dc, ds := count(n)-before[n], sum(n)-beforeSum[n]
		if w := want[n]; dc != w[0] || (w[1] >= 0 && ds != w[1]) || (w[1] < 0 && ds <= 0) {
			t.Errorf("%s: count +%v sum +%v, want %v", n, dc, ds, w)
		}
	}
	r, err := http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	text, _ := io.ReadAll(r.Body)
	var info string
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "vllm:cache_config_info{") {
			info = line
		}
	}
	if !strings.Contains(info, `block_size="16"`) || !strings.Contains(info, `enable_prefix_caching="true"`) ||
		!strings.Contains(info, `cache_dtype="f`) || !strings.HasSuffix(info, " 1") {
		t.Errorf("vllm:cache_config_info: %q", info)
	}
}
