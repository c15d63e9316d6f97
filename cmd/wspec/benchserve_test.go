//go:build long

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// (CI's long tier: go test -tags long -run BenchServe ./cmd/wspec/; each loads engines whose
// kernels a cold machine compiles, a minute of the quick tier's ten.)
//
// `wspec bench --serve` measures each concurrency with speculation on, then off (after a run
// off the record), and writes its rows as JSON.
func TestBenchServe(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	if err := runBench([]string{"--serve", "--concurrency", "2", "--requests", "3", "--tokens", "5", "--json", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []serveBenchRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows: %s", len(rows), b)
	}
	for i, r := range rows {
		if r.Requests != 3 || r.Sessions != 3 || r.Workload != "stories" || !r.PrefixCaching || r.GeneratedTokens != 15 || r.TokensPerSecond <= 0 || r.TTFTMedianMs <= 0 || r.ITLMedianMs <= 0 ||
			r.Concurrency != 2 || (r.Speculation == "off") != (i%2 == 1) {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	if err := runBench([]string{"--serve", "--concurrency", "0"}); err == nil || !strings.Contains(err.Error(), "--concurrency 0") {
		t.Errorf("--concurrency 0: %v", err)
	}
	for _, bad := range [][]string{{"--workload", "poetry"}, {"--prefix-caching", "maybe"}} {
		if err := runBench(append([]string{"--serve"}, bad...)); err == nil || !strings.Contains(err.Error(), bad[1]) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// The chat workload resends each session's history: later turns find it in the prefix cache
// (a hit rate above 0.3 with replies of 6 tokens), and without prefix caching nothing is found.
func TestBenchServeChat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	if err := runBench([]string{"--serve", "--workload", "chat", "--prefix-caching", "both", "--concurrency", "2", "--requests", "2",
		"--tokens", "6", "--speculative-mode", "suffix", "--json", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []serveBenchRow
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 4 {
		t.Fatalf("%v: %s", err, b)
	}
	for i, r := range rows {
		cached := i < 2
		if r.Workload != "chat" || r.Sessions != 2 || r.Requests != 6 || r.GeneratedTokens != 36 || r.PrefixCaching != cached ||
			r.TTFTLaterMs <= 0 || (cached && r.CacheHitRate < 0.3) || (!cached && r.CacheHitRate != 0) || (i%2 == 0) != strings.HasPrefix(r.Speculation, "suffix") {
			t.Errorf("row %d: %+v", i, r)
		}
	}
}
