package serve

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/wspec/wspec/spec/engine"
)

// scrape reads /metrics as the inference gateway's endpoint picker does: Prometheus text,
// parsed by Prometheus's own parser, each family by its name and type.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse as Prometheus text: %v", err)
	}
	return fams
}

// gaugeValue is the value of the family's one gauge series.
func gaugeValue(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || f.GetType() != dto.MetricType_GAUGE || len(f.GetMetric()) != 1 {
		t.Fatalf("%s: want one gauge series, got %v", name, f)
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}

// The model server protocol of the Gateway API Inference Extension, as its endpoint picker
// reads it: vllm:num_requests_waiting (gauge: queued requests), vllm:num_requests_running
// (gauge), vllm:kv_cache_usage_perc and vllm:gpu_cache_usage_perc (gauges, 0..1) and
// vllm:lora_requests_info (a gauge whose labels list the adapters; none here),
// vllm:cache_config_info (whose block_size and num_gpu_blocks labels the prefix-cache scorer's
// auto-tuning reads: the page size in tokens and the pages a replica holds), read while
// eight requests run on a server that batches two: requests wait (waiting > 0), at most two
// run, KV usage rises while they run and falls back after.
func TestModelServerProtocol(t *testing.T) {
	f := load(t, "protocol", engine.Options{MaxNumSeqs: 2}, Config{})
	fams := scrape(t, f.ts.URL)
	idle := gaugeValue(t, fams, "vllm:kv_cache_usage_perc")
	if v := gaugeValue(t, fams, "vllm:gpu_cache_usage_perc"); v != idle {
		t.Errorf("gpu_cache_usage_perc %v, kv_cache_usage_perc %v", v, idle)
	}
	lora := fams["vllm:lora_requests_info"]
	if lora == nil || lora.GetType() != dto.MetricType_GAUGE || len(lora.GetMetric()) != 1 {
		t.Fatalf("vllm:lora_requests_info: %v", lora)
	}
	labels := map[string]string{}
	for _, l := range lora.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["max_lora"] != "0" || labels["running_lora_adapters"] != "" || labels["waiting_lora_adapters"] != "" {
		t.Errorf("vllm:lora_requests_info labels %v", labels)
	}
	cache := fams["vllm:cache_config_info"]
	if cache == nil || len(cache.GetMetric()) != 1 {
		t.Fatalf("vllm:cache_config_info: %v", cache)
	}
	cacheLabels := map[string]string{}
	for _, l := range cache.GetMetric()[0].GetLabel() {
		cacheLabels[l.GetName()] = l.GetValue()
	}
	info := f.e.Info()
	if cacheLabels["block_size"] != strconv.Itoa(info.Memory.PageSize) || cacheLabels["num_gpu_blocks"] != strconv.Itoa(info.Memory.Pages) {
		t.Errorf("vllm:cache_config_info labels %v; the engine has %d pages of %d tokens", cacheLabels, info.Memory.Pages, info.Memory.PageSize)
	}
	if ts := lora.GetMetric()[0].GetGauge().GetValue(); time.Since(time.Unix(int64(ts), 0)).Abs() > time.Minute {
		t.Errorf("vllm:lora_requests_info's value %v is not the time it was read", ts)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"prompt": "Once upon a time there was a ` + strings.Repeat("very ", i) + `big dog", "max_tokens": 40, "ignore_eos": true}`
			req, _ := http.NewRequestWithContext(ctx, "POST", f.ts.URL+"/v1/completions", strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%d %s", resp.StatusCode, b.String())
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var maxWaiting, maxRunning, maxKV float64
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		case <-time.After(20 * time.Millisecond):
		}
		fams := scrape(t, f.ts.URL)
		w, r, kv := gaugeValue(t, fams, "vllm:num_requests_waiting"), gaugeValue(t, fams, "vllm:num_requests_running"),
			gaugeValue(t, fams, "vllm:kv_cache_usage_perc")
		if kv < 0 || kv > 1 {
			t.Fatalf("kv_cache_usage_perc %v outside 0..1", kv)
		}
		maxWaiting, maxRunning, maxKV = max(maxWaiting, w), max(maxRunning, r), max(maxKV, kv)
	}
	t.Logf("idle KV %.4f; under load: waiting up to %v, running up to %v, KV up to %.4f", idle, maxWaiting, maxRunning, maxKV)
	if maxWaiting < 1 {
		t.Errorf("no request was seen waiting while 8 ran on a batch of 2")
	}
	if maxRunning < 1 || maxRunning > 2 {
		t.Errorf("running up to %v, want 1..2", maxRunning)
	}
	if maxKV <= idle {
		t.Errorf("KV usage did not rise while requests ran: %v (idle %v)", maxKV, idle)
	}
	f.waitIdle(t)
	fams = scrape(t, f.ts.URL)
	if w, r := gaugeValue(t, fams, "vllm:num_requests_waiting"), gaugeValue(t, fams, "vllm:num_requests_running"); w != 0 || r != 0 {
		t.Errorf("after the requests: waiting %v, running %v", w, r)
	}
	if kv := gaugeValue(t, fams, "vllm:kv_cache_usage_perc"); kv >= maxKV {
		t.Errorf("KV usage %v after the requests, %v while they ran: it did not fall", kv, maxKV)
	}
}
