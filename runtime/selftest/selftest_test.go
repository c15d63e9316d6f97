package selftest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/devtest"
)

// testDevice is the package's tests' device (devtest.Device).
func testDevice(t testing.TB) *runtime.Device { return devtest.Device(t) }

// TestPortability runs the quick tier's cases on the adapter (the full tier with
// WSPEC_SELFTEST_FULL=1) and fails on any failing one. Set WSPEC_SELFTEST to a filter to run
// a subset, WSPEC_SELFTEST_JSON to a path to keep the report.
func TestPortability(t *testing.T) {
	d := testDevice(t)
	filter := os.Getenv("WSPEC_SELFTEST")
	rep := NewReport(d, Options{Filter: filter, Full: os.Getenv("WSPEC_SELFTEST_FULL") == "1", Log: func(s string) { t.Log(s) }})
	t.Logf("\n%s", Table(rep))
	if p := os.Getenv("WSPEC_SELFTEST_JSON"); p != "" {
		if err := WriteJSON(p, []Report{rep}); err != nil {
			t.Error(err)
		}
	}
	if rep.Cases == 0 {
		t.Fatalf("no case matches %q", filter)
	}
	if rep.Failed > 0 {
		t.Fatalf("selftest: %d of %d cases failed", rep.Failed, rep.Cases)
	}
	t.Logf("selftest: %d cases (%d kernels), all passed in %.1fs", rep.Cases, rep.Kernels, rep.Elapsed.Seconds())
	// Print it outside the test log too, so that `go test` without -v shows the count.
	fmt.Printf("selftest: %d cases (%d kernels), all passed\n", rep.Cases, rep.Kernels)
}

// The checker must catch what it exists to catch: a wrong value, an untouched element that
// was written, a NaN, and the poison left where a value was due.
func TestExpectCatches(t *testing.T) {
	p := poisonF32
	for _, c := range []struct {
		name      string
		got, want []float32
		fail      bool
	}{
		{"equal", []float32{1, 2, p}, []float32{1, 2, p}, false},
		{"within tolerance", []float32{1.0005}, []float32{1}, false},
		{"wrong value", []float32{1, 2.1}, []float32{1, 2}, true},
		{"wrote an untouched element", []float32{1, 0}, []float32{1, p}, true},
		{"left the poison", []float32{p}, []float32{1}, true},
		{"NaN", []float32{float32(math.NaN())}, []float32{1}, true},
	} {
		r := &Result{}
		ch := &checker{res: r}
		ch.expect("y", c.got, c.want, tol{1e-4, 1e-3})
		if failed := len(r.FirstMismatches) > 0; failed != c.fail {
			t.Errorf("%s: failed = %v (%v), want %v", c.name, failed, r.FirstMismatches, c.fail)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	rep := Summarize(testDevice(t).Adapter.Info, []Result{{Kernel: "k", Variant: "f32", Size: "n=1", Pass: true, Elapsed: time.Millisecond}})
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, []Report{rep}); err != nil {
		t.Fatal(err)
	}
	var back []Report
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 1 || back[0].Cases != 1 || back[0].Results[0].Kernel != "k" {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if !strings.Contains(Table(rep), "1/1") {
		t.Errorf("table:\n%s", Table(rep))
	}
}

// PerVariant keeps n cases of each kernel/variant, its first and last among them, and every
// kernel/variant of the quick tier.
func TestPerVariant(t *testing.T) {
	all := chosen(Options{})
	groups := map[string][]string{}
	for _, tc := range all {
		groups[tc.kernel+"/"+tc.variant] = append(groups[tc.kernel+"/"+tc.variant], tc.size)
	}
	got := map[string][]string{}
	for _, tc := range chosen(Options{PerVariant: 2}) {
		got[tc.kernel+"/"+tc.variant] = append(got[tc.kernel+"/"+tc.variant], tc.size)
	}
	if len(got) != len(groups) {
		t.Fatalf("%d kernel/variants kept of %d", len(got), len(groups))
	}
	for g, sizes := range groups {
		want := []string{sizes[0], sizes[len(sizes)-1]}
		if len(sizes) == 1 {
			want = want[:1]
		}
		if fmt.Sprint(got[g]) != fmt.Sprint(want) {
			t.Errorf("%s: kept %v of %v", g, got[g], sizes)
		}
	}
}
