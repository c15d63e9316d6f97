package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/wspec/wspec/weights/chat/internal/jinja"
)

// maxDepth bounds the nesting of a JSON value handed to a template (a hostile request could
// nest deeply).
const maxDepth = 64

// jsonValue turns one JSON document into a template value as Python's json.loads does: objects
// keep their keys' order (tojson writes them back in that order), integers stay integers and
// numbers with a point or exponent become floats.
func jsonValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), fmt.Errorf("chat: trailing data after a JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxDepth {
		return jinja.Undefined(), fmt.Errorf("chat: JSON nested more than %d deep", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("chat: %w", err)
	}
	switch t := tok.(type) {
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		if i, err := t.Int64(); err == nil && !bytes.ContainsAny([]byte(t), ".eE") {
			return jinja.NewInt(i), nil
		}
		f, err := t.Float64()
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("chat: number %s: %w", t, err)
		}
		return jinja.NewFloat(f), nil
	case json.Delim:
		if t == '[' {
			items := []jinja.Value{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		}
		d := jinja.NewDict()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("chat: %w", err)
			}
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return jinja.Undefined(), err
			}
			d.AsDict().Set(k.(string), v)
		}
		_, err := dec.Token()
		return d, err
	}
	return jinja.Undefined(), fmt.Errorf("chat: unexpected JSON token %v", tok)
}

// dict builds a template dict from key/value pairs, in order, leaving out undefined values.
func dict(kv ...any) jinja.Value {
	d := jinja.NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1].(jinja.Value)
		if !v.IsUndefined() {
			d.AsDict().Set(kv[i].(string), v)
		}
	}
	return d
}
