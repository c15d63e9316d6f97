package serve

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/sched"
)

// Metrics are the server's Prometheus metrics under vLLM's names (the "vllm:" prefix kept,
// so that vLLM's dashboards and alerts work unchanged), each labelled model_name and engine
// ("0") as vLLM labels them. Create them before the engine, pass OnStep to
// engine.Options.OnStep, then give them to the server with Config.Metrics.
type Metrics struct {
	reg   *prometheus.Registry
	model string
	stats atomic.Pointer[func() engine.Stats] // the engine's load, read at scrape time

	promptTokens, generationTokens, preemptions prometheus.Counter
	prefixQueries, prefixHits                   prometheus.Counter
	success                                     *prometheus.CounterVec // by finished_reason
	ttft, itl, tpot, e2e, queue                 prometheus.Histogram
	iterationTokens                             prometheus.Histogram
	prefillTime, decodeTime, inferenceTime      prometheus.Histogram
	// per request, made when the engine is known (their buckets go up to its context)
	perRequest                                 sync.Once
	promptLen, generationLen, maxTokens, nHist prometheus.Histogram

	// speculative decoding (nil without it)
	numDrafts, draftTokens, acceptedTokens prometheus.Counter
	acceptedPerPos                         *prometheus.CounterVec // by position
}

// Histogram buckets as vLLM's (seconds).
var (
	ttftBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	requestBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
)

// NewMetrics makes the metrics of a server serving model; k > 0 (the engine's draft
// tokens per step) adds the speculative decoding counters, with positions 0..k-1.
func NewMetrics(model string, k int) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), model: model}
	labels := prometheus.Labels{"model_name": model, "engine": "0"}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		m.reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: labels, Buckets: buckets})
		m.reg.MustRegister(h)
		return h
	}
	gauge := func(name, help string, f func(engine.Stats) float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, func() float64 {
			if st := m.stats.Load(); st != nil {
				return f((*st)())
			}
			return 0
		}))
	}
	gauge("vllm:num_requests_running", "Sequences in the running batch.", func(s engine.Stats) float64 { return float64(s.Running) })
	gauge("vllm:num_requests_waiting", "Sequences waiting for a place in the batch (queued or preempted).", func(s engine.Stats) float64 { return float64(s.Waiting) })
	kvUsage := func(s engine.Stats) float64 {
		if s.Pages == 0 {
			return 0
		}
		return float64(s.PagesUsed) / float64(s.Pages)
	}
	gauge("vllm:kv_cache_usage_perc", "KV cache usage: the share of KV pages in use, 0..1.", kvUsage)
	// The older name, which the Gateway API Inference Extension's model server protocol names
	// and its endpoint picker's releases before vLLM's rename read.
	gauge("vllm:gpu_cache_usage_perc", "KV cache usage: the share of KV pages in use, 0..1 (vllm:kv_cache_usage_perc's older name).", kvUsage)
	// LoRA adapters: none (wspec serves no adapters); the protocol's endpoint picker reads
	// this gauge's labels, its value the time it was last updated.
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:lora_requests_info",
		Help:        "LoRA adapters running and waiting (none: wspec serves no adapters); the value is when it was read.",
		ConstLabels: prometheus.Labels{"max_lora": "0", "running_lora_adapters": "", "waiting_lora_adapters": ""}},
		func() float64 { return float64(time.Now().UnixNano()) / 1e9 }))
	m.promptTokens = counter("vllm:prompt_tokens_total", "Prompt tokens processed.")
	m.generationTokens = counter("vllm:generation_tokens_total", "Tokens generated (accepted drafts included).")
	m.preemptions = counter("vllm:num_preemptions_total", "Sequences preempted (their KV pages taken back, recomputed later).")
	m.prefixQueries = counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.")
	m.prefixHits = counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache (not computed again).")
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
		Help: "Finished generations by finish reason.", ConstLabels: labels}, []string{"finished_reason"})
	m.reg.MustRegister(m.success)
	for _, r := range []string{"stop", "length", "abort"} {
		m.success.WithLabelValues(r)
	}
	m.ttft = hist("vllm:time_to_first_token_seconds", "Time from a request's arrival to its first token.", ttftBuckets)
	m.itl = hist("vllm:inter_token_latency_seconds", "Time between two text deliveries of one sequence (one sample per step that emitted text, however many tokens it held).", itlBuckets)
	m.tpot = hist("vllm:request_time_per_output_token_seconds", "Per finished request: decode time / (generated tokens - 1).", itlBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Time from a request's arrival to its end.", requestBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Time a request waited for a place in the batch.", requestBuckets)
	m.prefillTime = hist("vllm:request_prefill_time_seconds", "Time a request took from its first step to its first token.", requestBuckets)
	m.decodeTime = hist("vllm:request_decode_time_seconds", "Time a request took from its first token to its last.", requestBuckets)
	m.inferenceTime = hist("vllm:request_inference_time_seconds", "Time a request took from its first step to its last token.", requestBuckets)
	m.iterationTokens = hist("vllm:iteration_tokens_total", "Rows (tokens) per engine step.", []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384})
	if k > 0 {
		m.numDrafts = counter("vllm:spec_decode_num_drafts_total", "Verify steps of a sequence that had draft tokens (counted when its request ends).")
		m.draftTokens = counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens proposed and verified.")
		m.acceptedTokens = counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted (the bonus token not counted).")
		m.acceptedPerPos = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:spec_decode_num_accepted_tokens_per_pos_total",
			Help: "Drafts accepted at each position: position i counts steps with at least i+1 drafts accepted.", ConstLabels: labels}, []string{"position"})
		m.reg.MustRegister(m.acceptedPerPos)
		for i := 0; i < k; i++ {
			m.acceptedPerPos.WithLabelValues(strconv.Itoa(i))
		}
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// OnStep counts one engine step; it is engine.Options.OnStep (it never blocks).
func (m *Metrics) OnStep(st sched.StepInfo) {
	m.iterationTokens.Observe(float64(st.Rows))
	m.preemptions.Add(float64(st.Preempted))
	m.prefixQueries.Add(float64(st.CacheQueries))
	m.prefixHits.Add(float64(st.CachedTokens))
	if m.draftTokens == nil {
		return
	}
	m.draftTokens.Add(float64(st.Drafts))
	m.acceptedTokens.Add(float64(st.Accepted))
	for i, n := range st.AcceptedAt {
		if n > 0 {
			m.acceptedPerPos.WithLabelValues(strconv.Itoa(i)).Add(float64(n))
		}
	}
}

// watch reads the engine's load at each scrape, and makes the series that depend on the
// engine: the per-request token histograms (buckets 1, 2, 5, 10, 20, 50, ... up to the
// context, as vLLM's) and vllm:cache_config_info.
func (m *Metrics) watch(e *engine.Engine) {
	f := e.Stats
	m.stats.Store(&f)
	info := e.Info()
	m.perRequest.Do(func() {
		labels := prometheus.Labels{"model_name": m.model, "engine": "0"}
		hist := func(name, help string, buckets []float64) prometheus.Histogram {
			h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: labels, Buckets: buckets})
			m.reg.MustRegister(h)
			return h
		}
		lens := buckets125(info.Config.MaxSeq)
		m.promptLen = hist("vllm:request_prompt_tokens", "Prompt tokens of each finished request.", lens)
		m.generationLen = hist("vllm:request_generation_tokens", "Tokens generated by each finished request.", lens)
		m.maxTokens = hist("vllm:request_params_max_tokens", "max_tokens of each request (the rest of the context when unset).", lens)
		m.nHist = hist("vllm:request_params_n", "n of each request.", []float64{1, 2, 5, 10, 20})
		mp := info.Memory
		cache := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "The KV cache's configuration, in the labels.",
			ConstLabels: prometheus.Labels{"model_name": m.model, "engine": "0", "block_size": strconv.Itoa(mp.PageSize),
				"cache_dtype": mp.KVDType, "num_gpu_blocks": strconv.Itoa(mp.Pages), "num_cpu_blocks": "0",
				"enable_prefix_caching": strconv.FormatBool(info.PrefixCaching), "kv_cache_memory_bytes": strconv.FormatInt(mp.KVBytes, 10),
				"max_model_len": strconv.Itoa(mp.MaxModelLen)}})
		cache.Set(1)
		m.reg.MustRegister(cache)
	})
}

// buckets125 are 1, 2, 5, 10, 20, 50, ... up to max (vLLM's build_1_2_5_buckets).
func buckets125(max int) []float64 {
	var out []float64
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p > max {
				return out
			}
			out = append(out, float64(m*p))
		}
	}
}

// request counts a request's parameters as it starts: its n, and its max_tokens (the rest of
// the context when unset) per prompt.
func (m *Metrics) request(n int, maxTokens []int) {
	if m.nHist == nil {
		return
	}
	m.nHist.Observe(float64(n))
	for _, t := range maxTokens {
		m.maxTokens.Observe(float64(t))
	}
}

// finished counts a generation that ended after took.
func (m *Metrics) finished(res *engine.Result, took time.Duration) {
	m.promptTokens.Add(float64(len(res.PromptTokens)))
	m.generationTokens.Add(float64(len(res.Tokens)))
	reason := finishReason(res.Finish)
	if res.Finish == spec.FinishCancelled {
		reason = "abort" // vLLM's name
	}
	m.success.WithLabelValues(reason).Inc()
	prefill := max(res.Prefill-res.Queued, 0)
	if len(res.Tokens) > 0 {
		m.ttft.Observe(res.Prefill.Seconds())
		m.prefillTime.Observe(prefill.Seconds())
		m.decodeTime.Observe(res.Decode.Seconds())
		m.inferenceTime.Observe((prefill + res.Decode).Seconds())
	}
	if len(res.Tokens) > 1 {
		m.tpot.Observe(res.Decode.Seconds() / float64(len(res.Tokens)-1))
	}
	m.e2e.Observe(took.Seconds())
	m.queue.Observe(res.Queued.Seconds())
	if m.promptLen != nil {
		m.promptLen.Observe(float64(len(res.PromptTokens)))
		m.generationLen.Observe(float64(len(res.Tokens)))
	}
	if m.numDrafts != nil {
		m.numDrafts.Add(float64(res.Metrics.Drafts))
	}
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
