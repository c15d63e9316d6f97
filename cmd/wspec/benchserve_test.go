package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `wspec bench --serve` measures each concurrency with speculation on and off and writes
// its rows as JSON.
func TestBenchServe(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	if err := runBench([]string{"--serve", "--concurrency", "1,2", "--requests", "3", "--tokens", "5", "--json", out}); err != nil {
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
	if len(rows) != 4 {
		t.Fatalf("%d rows: %s", len(rows), b)
	}
	for i, r := range rows {
		if r.Requests != 3 || r.GeneratedTokens != 15 || r.TokensPerSecond <= 0 || r.TTFTMedianMs <= 0 || r.ITLMedianMs <= 0 ||
			r.Concurrency != []int{1, 2}[i%2] || (r.Speculation == "off") != (i >= 2) {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	if err := runBench([]string{"--serve", "--concurrency", "0"}); err == nil || !strings.Contains(err.Error(), "--concurrency 0") {
		t.Errorf("--concurrency 0: %v", err)
	}
}
