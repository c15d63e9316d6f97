package model

import (
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// chunks hands put every row of the parts, in order, across the parts' boundaries, while its
// goroutine reads ahead into the other half of the buffer; a read error or a put error ends
// it with that error, and its reader goroutine with it.
func TestChunksReadAhead(t *testing.T) {
	before := runtime.NumGoroutine()
	parts := []part{{"a", 5}, {"b", 2}, {"c", 7}}
	const width, chunk = 2, 3
	read := func(name string, row0 int, dst []int) error {
		for i := range dst {
			dst[i] = int(name[0])*1000 + row0*width + i // which tensor, row and value
		}
		return nil
	}
	var want, got []int
	for _, p := range parts {
		w := make([]int, p.rows*width)
		read(p.name, 0, w)
		want = append(want, w...)
	}
	var starts []int
	err := chunks(parts, chunk, width, make([]int, 2*chunk*width), read, func(row int, dst []int) error {
		starts = append(starts, row)
		got = append(got, dst...)
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(starts, []int{0, 3, 6, 9, 12}) {
		t.Fatalf("err %v, chunks at %v, values %v; want %v", err, starts, got, want)
	}

	bad := errors.New("bad read")
	err = chunks(parts, chunk, width, make([]int, 2*chunk*width), func(name string, row0 int, dst []int) error {
		if name == "c" {
			return bad
		}
		return read(name, row0, dst)
	}, func(int, []int) error { return nil })
	if !errors.Is(err, bad) {
		t.Errorf("a failing read: %v, want %v", err, bad)
	}
	stop := errors.New("put failed")
	for range 20 { // the reader may be between chunks or mid-chunk when put fails
		err = chunks(parts, chunk, width, make([]int, 2*chunk*width), read, func(row int, _ []int) error {
			if row > 0 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) {
			t.Fatalf("a failing put: %v, want %v", err, stop)
		}
	}
	if n := settledGoroutines(before); n > before {
		t.Errorf("%d goroutines after the calls, %d before: a reader was left blocked", n, before)
	}
}

// settledGoroutines waits up to a second for the goroutine count to fall to n, and returns it.
func settledGoroutines(n int) int {
	for i := 0; i < 100 && runtime.NumGoroutine() > n; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine()
}
