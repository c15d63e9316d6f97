package engine

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec"
)

// residentKiB is the process's resident memory (Linux: /proc/self/status).
func residentKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("resident memory: %v (the test reads /proc)", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// Loading an engine on a device of its own, generating with a drafter and closing it, over and
// over, holds no more memory as it goes: resident memory settles (a probe saw 3.4 MB a cycle
// once), the Go heap and the goroutines come back to where they were. Minima over a few
// cycles are compared, since the allocators' caches make single readings noisy.
func TestLoadCloseDoesNotLeak(t *testing.T) {
	const cycles = 12
	rss := make([]int, cycles)
	var heap [cycles]uint64
	goroutines := runtime.NumGoroutine()
	for i := range cycles {
		e, err := Load(storiesDir, Options{Speculative: &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Generate(context.Background(), "Once upon a time, Lily", GenerateOptions{MaxTokens: 12}); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss[i], heap[i] = residentKiB(t), ms.HeapInuse
	}
	early, late := min(rss[2], rss[3], rss[4]), min(rss[9], rss[10], rss[11])
	t.Logf("resident KiB by cycle %v; Go heap %d -> %d KiB", rss, heap[2]>>10, heap[cycles-1]>>10)
	if late-early > 12<<10 {
		t.Errorf("resident memory grew %d KiB over 7 cycles (%d KiB a cycle)", late-early, (late-early)/7)
	}
	if heap[cycles-1] > heap[2]+2<<20 {
		t.Errorf("Go heap grew from %d to %d KiB", heap[2]>>10, heap[cycles-1]>>10)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after the cycles, %d before", n, goroutines)
	}
}
