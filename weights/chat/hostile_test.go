package chat

import (
	"errors"
	"strings"
	"testing"
)

// Hostile templates (from a model's files or --chat-template) fail their render with
// ErrLimit, or are refused when compiled, and never take the process down: each of these
// once ended it (a Go stack overflow or running out of memory) or kept a core busy for hours.
func TestHostileTemplates(t *testing.T) {
	const doubled = `{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}`
	for _, c := range []struct{ name, src string }{
		{"recursive macro", `{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}`},
		{"mutually recursive macros", `{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`},
		{"range(1e9)", `{% for i in range(1000000000) %}{% endfor %}`},
		{"range(1e9) as a list", `{{ range(1000000000) | list | length }}`},
		{"nested loops", `{% for a in range(1000000) %}{% for b in range(1000000) %}{% endfor %}{% endfor %}`},
		{"a string repeated", `{{ 'a' * 100000000000 }}`},
		{"a string doubled", `{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}`},
		{"a list holding itself, printed", `{% set l = [] %}{% set _ = l.append(l) %}{{ l }}`},
		{"a list holding itself, as JSON", `{% set l = [] %}{% set _ = l.append(l) %}{{ l | tojson }}`},
		{"a list holding itself, compared", `{% set l = [] %}{% set _ = l.append(l) %}{% set m = [] %}{% set _ = m.append(m) %}{{ l == m }}`},
		{"2^60 items printed", doubled + `{{ ns.l }}`},
		{"2^60 items as JSON", doubled + `{{ ns.l | tojson(indent=2) }}`},
		{"2^60 items joined", doubled + `{{ ns.l | join(',') }}`},
		{"2^60 items compared", doubled + `{% set ns2 = namespace(l=[1]) %}{% for i in range(60) %}{% set ns2.l = [ns2.l, ns2.l] %}{% endfor %}{{ ns.l == ns2.l }}`},
		{"indent of 1e8", `{{ ('x\n' * 1000) | indent(100000000) }}`},
		{"replace growing", `{{ 'aaaa' | replace('a', 'b' * 30000000) }}`},
		{"output of gigabytes", `{% for i in range(1000000) %}{{ 'x' * 30000000 }}{% endfor %}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp, err := New(c.src, "test", "<s>", "</s>", false)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tp.Render(Input{Messages: []Message{{Role: "user", Content: "hi"}}})
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("rendered %d bytes, error %v; want ErrLimit", len(out), err)
			}
			t.Log(err)
		})
	}
	for _, src := range []string{`{% include "chat.jinja" %}`, `{% extends "chat.jinja" %}`, `{% import "m.jinja" as m %}`} {
		if _, err := New(src, "test", "", "", false); err == nil || !strings.Contains(err.Error(), "unknown statement") {
			t.Errorf("%s: %v, want refused when compiled", src, err)
		}
	}
}

// A render ends when its Done channel closes (the client went away), not at its own end.
func TestRenderCancelled(t *testing.T) {
	tp, err := New(`{% for a in range(300) %}{% for b in range(300) %}{{ b }}{% endfor %}{% endfor %}`, "test", "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	close(done)
	if _, err := tp.Render(Input{Done: done}); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("%v, want a cancelled render", err)
	}
	if out, err := tp.Render(Input{}); err != nil || len(out) < 1000 {
		t.Fatalf("the same render not cancelled: %d bytes, %v", len(out), err)
	}
}
