package chat

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wspec/wspec/weights/chat/internal/jinja"
)

// tojsonName is the name the template's tojson filter is renamed to, so that wspec's own
// serves it: the library's tojson sorts keys and escapes '<' in its indent form, where
// transformers' keeps insertion order and escapes nothing (Llama 3.1's tool list is written
// with tojson(indent=4)). The library looks a filter it does not know up among the
// template's variables.
const tojsonName = "__wspec_tojson"

// tojsonFilter finds the tojson filter after a pipe.
var tojsonFilter = regexp.MustCompile(`\|(\s*)tojson\b`)

// withOwnTojson renames the source's tojson filters to tojsonName.
func withOwnTojson(source string) string {
	return tojsonFilter.ReplaceAllString(source, "|${1}"+tojsonName)
}

// tojson is transformers' tojson filter: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys).
func tojson(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), fmt.Errorf("tojson: no value")
	}
	e := jsonEncoder{item: ", ", key: ": ", indent: -1}
	if v, ok := kwargs["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			e.indentStr = strings.Repeat(" ", int(max(0, min(v.AsInt(), 64))))
		case v.IsString() && len(v.AsString()) <= 64:
			e.indentStr = v.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer or a string of at most 64 bytes")
		}
		e.indent, e.item = 0, ","
	}
	if v, ok := kwargs["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), fmt.Errorf("tojson: separators must be two strings")
		}
		e.item, e.key = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	if v, ok := kwargs["sort_keys"]; ok {
		e.sort = v.IsTruthy()
	}
	if err := e.value(args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(e.b.String()), nil
}

type jsonEncoder struct {
	b         strings.Builder
	item, key string
	indent    int // -1: one line
	indentStr string
	sort      bool
}

func (e *jsonEncoder) newline(depth int) {
	if e.indent < 0 {
		return
	}
	e.b.WriteByte('\n')
	for range depth {
		e.b.WriteString(e.indentStr)
	}
}

func (e *jsonEncoder) value(v jinja.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: tojson of a value nested more than %d deep (or holding itself)", jinja.ErrLimit, maxDepth)
	}
	if e.b.Len() > jinja.MaxValueBytes {
		return fmt.Errorf("%w: tojson of a value longer than %d bytes", jinja.ErrLimit, jinja.MaxValueBytes)
	}
	switch {
	case v.IsNone():
		e.b.WriteString("null")
	case v.IsBool():
		e.b.WriteString(map[bool]string{true: "true", false: "false"}[v.AsBool()])
	case v.IsInt():
		e.b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		e.b.WriteString(pyFloat(v.AsFloat()))
	case v.IsString():
		pyString(&e.b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			e.b.WriteString("[]")
			return nil
		}
		e.b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				e.b.WriteString(e.item)
			}
			e.newline(depth + 1)
			if err := e.value(it, depth+1); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if e.sort {
			keys = slices.Sorted(slices.Values(keys))
		}
		if len(keys) == 0 {
			e.b.WriteString("{}")
			return nil
		}
		e.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				e.b.WriteString(e.item)
			}
			e.newline(depth + 1)
			pyString(&e.b, k)
			e.b.WriteString(e.key)
			val, _ := d.Get(k)
			if err := e.value(val, depth+1); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.b.WriteByte('}')
	default:
		return fmt.Errorf("tojson: a value of this kind is not JSON serializable")
	}
	return nil
}

// pyString writes s as Python's json.dumps with ensure_ascii=False does: quotes, backslashes
// and control characters escaped, everything else as is.
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyFloat writes f as Python's repr does: the shortest digits that read back, positional
// with at least one decimal when 1e-4 <= |f| < 1e16, else d.ddde±XX.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	out := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(out, ".") {
		out += ".0"
	}
	return out
}
