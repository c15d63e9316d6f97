//go:build !js

package webgpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestABILayout compares every struct size and field offset of abi.h with the layout measured
// on the pinned Dawn build (a copy of ../shared/webgpu/abi-layout.txt in testdata).
func TestABILayout(t *testing.T) {
	f, err := os.Open("testdata/abi-layout.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type entry struct{ off, size int }
	want := map[string]entry{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		kv := map[string]int{}
		for _, fl := range fields[2:] {
			if k, v, ok := strings.Cut(fl, "="); ok {
				if n, err := strconv.Atoi(v); err == nil {
					kv[k] = n
				}
			}
		}
		switch fields[0] {
		case "S":
			want[fields[1]] = entry{kv["size"], kv["size"]}
		case "F":
			want[fields[1]] = entry{kv["off"], kv["sz"]}
		}
	}
	checked := 0
	for _, e := range Layout() {
		w, ok := want[e.Name]
		if !ok {
			t.Errorf("%s: not in abi-layout.txt", e.Name)
			continue
		}
		if e.Offset != w.off || e.Size != w.size {
			t.Errorf("%s: abi.h has offset/size %d/%d, the Dawn build %d/%d", e.Name, e.Offset, e.Size, w.off, w.size)
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d layout entries checked", checked)
	}
	t.Logf("%d struct sizes and field offsets match the pinned Dawn build", checked)
}
