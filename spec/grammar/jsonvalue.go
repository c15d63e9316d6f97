package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// object is a JSON object with its keys in the order written (a schema's properties are
// generated in that order).
type object struct {
	keys []string
	m    map[string]any
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.m[k]
	return v, ok
}

// parseJSON decodes text keeping the order of object keys: objects become *object, numbers
// json.Number, the rest as encoding/json decodes them.
func parseJSON(text []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	v, err := parseValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("text after the JSON value")
	}
	return v, nil
}

// maxDepth bounds the nesting of a schema document.
const maxDepth = 200

func parseValue(d *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{m: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := parseValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.m[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.m[k] = v
			}
			_, err := d.Token()
			return o, err
		case '[':
			var a []any
			for d.More() {
				v, err := parseValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := d.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// marshal writes v as compact JSON, objects in their order, without HTML escapes.
func marshal(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.String()
}

func writeJSON(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, k)
			b.WriteByte(':')
			writeJSON(b, v.m[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, x)
		}
		b.WriteByte(']')
	default:
		e := json.NewEncoder(b)
		e.SetEscapeHTML(false)
		e.Encode(v)
		b.Truncate(b.Len() - 1) // Encode's newline
	}
}
