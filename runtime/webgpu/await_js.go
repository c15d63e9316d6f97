package webgpu

import (
	"fmt"
	"syscall/js"
	"time"
)

// The browser binding: the same types and methods as the cgo binding, over navigator.gpu
// through syscall/js. Every wait is a promise awaited on a channel, so the Go runtime gives
// the JavaScript event loop back while it waits (a caller must not be a synchronous JS
// callback: the exported API runs each call in its own goroutine).

// await waits for a promise and returns its value, or its rejection as an error.
func await(p js.Value, what string) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	ok := js.FuncOf(func(_ js.Value, args []js.Value) any {
		v := js.Undefined()
		if len(args) > 0 {
			v = args[0]
		}
		ch <- result{v: v}
		return nil
	})
	fail := js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "rejected"
		if len(args) > 0 {
			msg = jsErrorString(args[0])
		}
		ch <- result{err: fmt.Errorf("%w: %s: %s", ErrValidation, what, msg)}
		return nil
	})
	p.Call("then", ok, fail)
	select {
	case r := <-ch:
		ok.Release()
		fail.Release()
		return r.v, r.err
	case <-time.After(waitTimeout): // the callbacks stay: the promise may still settle
		return js.Undefined(), fmt.Errorf("%w: %s after %v", ErrTimeout, what, waitTimeout)
	}
}

// jsErrorString is an exception's or a GPUError's message.
func jsErrorString(v js.Value) string {
	if v.Type() == js.TypeObject {
		if m := v.Get("message"); m.Type() == js.TypeString {
			return m.String()
		}
	}
	return v.String()
}

// object makes a plain JS object from a Go map (values: js.Value, strings, numbers, bools,
// nested maps and slices of them).
func object(m map[string]any) js.Value {
	o := js.Global().Get("Object").New()
	for k, v := range m {
		o.Set(k, jsValue(v))
	}
	return o
}

func jsValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return object(x)
	case []any:
		a := js.Global().Get("Array").New(len(x))
		for i, e := range x {
			a.SetIndex(i, jsValue(e))
		}
		return a
	case uint64:
		return float64(x)
	case uint32:
		return float64(x)
	}
	return v
}

// Release of a process-wide library is nothing to do in a page.
func TrimHeap() {}
