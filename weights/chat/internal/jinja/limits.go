package jinja

// wspec: this file is not in github.com/ardanlabs/jinja v1.8.0; see README.md beside it.

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrLimit is the error of a render that went past one of its bounds (Limits, MaxValueBytes,
// MaxItems, MaxNesting): a template that recurses without end, loops too long, or builds
// values or output too large is an error of that render, never a crash of the process.
var ErrLimit = errors.New("template limit")

// Bounds every render has, whatever its Limits.
const (
	MaxValueBytes = 32 << 20 // a string, or a value's printed or JSON form
	MaxItems      = 1 << 20  // a list (range's included) or dict
	MaxNesting    = 64       // lists and dicts within each other (a list holding itself is infinitely deep)
	maxWalk       = 1 << 24  // values visited by one comparison
)

// Limits bound one render. A zero field takes its default.
type Limits struct {
	Steps       int             // template nodes, expressions and loop iterations (default 1M)
	Depth       int             // macro and call-block calls within each other (default 64)
	OutputBytes int             // bytes written, every macro's and block's output counted (default 64 MiB)
	Deadline    time.Time       // wall-clock end (none when zero)
	Done        <-chan struct{} // closed when the render is no longer wanted (a client gone)
}

// budget is one render's Limits and what it has used; every evaluator of the render shares it.
type budget struct {
	Limits
	steps, depth, output int
}

func newBudget(l Limits) *budget {
	if l.Steps <= 0 {
		l.Steps = 1 << 20
	}
	if l.Depth <= 0 {
		l.Depth = 64
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = 64 << 20
	}
	return &budget{Limits: l}
}

// step charges one step; every 1024th also looks at the clock and Done.
func (b *budget) step() error {
	b.steps++
	if b.steps > b.Steps {
		return fmt.Errorf("%w: more than %d steps (a loop or recursion too long)", ErrLimit, b.Steps)
	}
	if b.steps%1024 == 0 {
		if !b.Deadline.IsZero() && time.Now().After(b.Deadline) {
			return fmt.Errorf("%w: still rendering at its deadline", ErrLimit)
		}
		select {
		case <-b.Done:
			return fmt.Errorf("%w: render cancelled", ErrLimit)
		default:
		}
	}
	return nil
}

func (b *budget) enter() error {
	b.depth++
	if b.depth > b.Depth {
		return fmt.Errorf("%w: macro calls nested more than %d deep (a recursion without end?)", ErrLimit, b.Depth)
	}
	return nil
}

func (b *budget) leave() { b.depth-- }

func (b *budget) chargeOutput(n int) error {
	b.output += n
	if b.output > b.OutputBytes {
		return fmt.Errorf("%w: more than %d bytes of output", ErrLimit, b.OutputBytes)
	}
	return nil
}

// limitPanic carries an ErrLimit out of code that returns no error (String, Equals); render
// recovers it.
type limitPanic struct{ err error }

func overLimit(format string, args ...any) {
	panic(limitPanic{fmt.Errorf("%w: "+format, append([]any{ErrLimit}, args...)...)})
}

// checkSize refuses a string or a list or dict too large to keep.
func checkSize(v Value) error {
	switch v.kind {
	case KindString:
		if n := len(v.AsString()); n > MaxValueBytes {
			return fmt.Errorf("%w: a string of %d bytes (at most %d)", ErrLimit, n, MaxValueBytes)
		}
	case KindList:
		if n := v.AsList().Len(); n > MaxItems {
			return fmt.Errorf("%w: a list of %d items (at most %d)", ErrLimit, n, MaxItems)
		}
	case KindDict:
		if n := v.AsDict().Len(); n > MaxItems {
			return fmt.Errorf("%w: a dict of %d keys (at most %d)", ErrLimit, n, MaxItems)
		}
	}
	return nil
}

// grown checks that a string about to be built from n bytes stays within MaxValueBytes.
func grown(what string, n int) error {
	if n > MaxValueBytes || n < 0 {
		return fmt.Errorf("%w: %s would make a string of more than %d bytes", ErrLimit, what, MaxValueBytes)
	}
	return nil
}

// replaceBounded is strings.Replace(s, old, new, count) refused if the result would pass
// MaxValueBytes.
func replaceBounded(s, old, new string, count int) (string, error) {
	n := strings.Count(s, old)
	if count >= 0 && count < n {
		n = count
	}
	if len(new) > len(old) && n > 0 && (len(new)-len(old)) > (MaxValueBytes-len(s))/n {
		return "", fmt.Errorf("%w: replace would make a string of more than %d bytes", ErrLimit, MaxValueBytes)
	}
	return strings.Replace(s, old, new, count), nil
}
