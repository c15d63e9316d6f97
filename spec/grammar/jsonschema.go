package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// JSON Schema, the subset OpenAI's strict mode takes and a little more: objects (properties
// in the order written; required ones always, optional ones each maybe; no other keys
// generated), free dictionaries (additionalProperties without properties), arrays (items,
// prefixItems, minItems, maxItems), strings (minLength, maxLength, pattern, format date,
// time, date-time, uuid, email, ipv4, hostname, uri; other formats are annotations; a format
// beside a pattern it keeps to is written by the format: within.go), integers and numbers (bounds: the values generated
// keep within the integers inside them), booleans, null, enum, const, anyOf, oneOf (as
// anyOf), a one-schema allOf, type lists, $ref into the document ($defs, definitions, #).
// Annotations (title, description, default, examples, ...) are ignored. Any other
// constraint is refused, named. Whitespace between tokens is at most a space, or one or two
// newlines and 20 spaces or tabs (an indented document), so an output cannot run on in blanks.

// schemaCompiler translates one schema document into rules.
type schemaCompiler struct {
	r    *rules
	doc  any
	refs map[string]int // "$ref" -> its rule
	ws   *node
	free map[string]int // the free JSON value's rules, made on first use
	// charNode is a string character (shared: nodes are never changed once built)
	charNode *node
}

var annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$anchor": true, "discriminator": true, "contentMediaType": true, "contentEncoding": true, "$defs": true,
	"definitions": true, "strict": true, "name": true, "example": true, "x-order": true}

// handled lists the keywords compileSchema implements (others are refused).
var handled = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"pattern": true, "format": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "enum": true, "const": true, "anyOf": true, "oneOf": true, "allOf": true, "$ref": true,
	"uniqueItems": true, "unevaluatedProperties": true, "nullable": true}

// jsonSchemaRules compiles schema text into rules; the root rule allows leading blanks.
func jsonSchemaRules(text []byte, b *budget) (*rules, int, error) {
	doc, err := parseJSON(text)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: the JSON schema is not JSON: %v", ErrInvalid, err)
	}
	c := &schemaCompiler{r: newRules(), doc: doc, refs: map[string]int{}, free: map[string]int{}}
	c.r.budget = b
	root := c.r.named("root")
	c.ws = wsNode()
	v, err := c.schema(doc, "#")
	if err != nil {
		return nil, 0, err
	}
	c.r.body[root] = seq(c.ws, v)
	return c.r, root, nil
}

// freeObjectRules is json_object: any JSON object.
func freeObjectRules() (*rules, int) {
	c := &schemaCompiler{r: newRules(), refs: map[string]int{}, free: map[string]int{}}
	root := c.r.named("root")
	c.ws = wsNode()
	c.freeValue()
	c.r.body[root] = seq(c.ws, ref(c.free["object"]))
	return c.r, root
}

// wsNode is the blanks allowed between JSON tokens, inline in each rule that has them (as a
// rule of its own, every token after a blank would return from it, and its masks would need
// the whole stack).
func wsNode() *node {
	return alt(empty(), lit(" "), seq(rep(lit("\n"), 1, 2), rep(alt(lit(" "), lit("\t")), 0, 20)))
}

func unsupported(path, what string) error {
	return fmt.Errorf("%w: JSON Schema %s at %s", ErrUnsupported, what, path)
}

func (c *schemaCompiler) schema(s any, path string) (*node, error) {
	if err := c.r.budget.spend(schemaWork); err != nil {
		return nil, err
	}
	switch s := s.(type) {
	case bool:
		if !s {
			return nil, unsupported(path, "false (a schema nothing matches)")
		}
		return c.freeValue(), nil
	case *object:
		return c.object(s, path)
	}
	return nil, fmt.Errorf("%w: JSON Schema at %s is not an object or a boolean", ErrInvalid, path)
}

func (c *schemaCompiler) object(s *object, path string) (*node, error) {
	for _, k := range s.keys {
		if !handled[k] && !annotations[k] {
			return nil, unsupported(path, fmt.Sprintf("keyword %q", k))
		}
	}
	if v, ok := s.get("uniqueItems"); ok && v != false {
		return nil, unsupported(path, `keyword "uniqueItems"`)
	}
	if v, ok := s.get("unevaluatedProperties"); ok && v != false {
		return nil, unsupported(path, `keyword "unevaluatedProperties" (other than false)`)
	}
	if r, ok := s.get("$ref"); ok {
		for _, k := range s.keys {
			if k != "$ref" && !annotations[k] {
				return nil, unsupported(path, fmt.Sprintf("keyword %q beside $ref", k))
			}
		}
		rs, _ := r.(string)
		return c.ref(rs, path)
	}
	if e, ok := s.get("const"); ok {
		return lit(marshal(e)), nil
	}
	if e, ok := s.get("enum"); ok {
		vals, _ := e.([]any)
		if len(vals) == 0 {
			return nil, fmt.Errorf("%w: JSON Schema enum at %s is not a list of values", ErrInvalid, path)
		}
		var alts []*node
		for _, v := range vals {
			alts = append(alts, lit(marshal(v)))
		}
		return alt(alts...), nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if e, ok := s.get(k); ok {
			subs, _ := e.([]any)
			if len(subs) == 0 {
				return nil, fmt.Errorf("%w: JSON Schema %s at %s is not a list of schemas", ErrInvalid, k, path)
			}
			var alts []*node
			for i, sub := range subs {
				n, err := c.schema(merged(s, sub, k), fmt.Sprintf("%s/%s/%d", path, k, i))
				if err != nil {
					return nil, err
				}
				alts = append(alts, n)
			}
			return alt(alts...), nil
		}
	}
	if e, ok := s.get("allOf"); ok {
		subs, _ := e.([]any)
		if len(subs) != 1 {
			return nil, unsupported(path, "allOf of more than one schema")
		}
		return c.schema(merged(s, subs[0], "allOf"), path+"/allOf/0")
	}
	types, err := typesOf(s, path)
	if err != nil {
		return nil, err
	}
	var alts []*node
	for _, t := range types {
		n, err := c.typed(t, s, path)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
	}
	if n, _ := s.get("nullable"); n == true && !slices.Contains(types, "null") {
		alts = append(alts, lit("null"))
	}
	return alt(alts...), nil
}

// merged is sub with the keywords of parent other than key added where sub lacks them (a
// schema's own type or properties beside its anyOf apply to each branch).
func merged(parent *object, sub any, key string) any {
	so, ok := sub.(*object)
	if !ok {
		return sub
	}
	out := &object{keys: slices.Clone(so.keys), m: map[string]any{}}
	for k, v := range so.m {
		out.m[k] = v
	}
	for _, k := range parent.keys {
		if _, has := out.m[k]; k == key || has || annotations[k] {
			continue
		}
		out.keys = append(out.keys, k)
		out.m[k] = parent.m[k]
	}
	return out
}

// typesOf is the schema's types: its "type", or what its keywords imply, or every type.
func typesOf(s *object, path string) ([]string, error) {
	t, ok := s.get("type")
	if !ok {
		switch {
		case has(s, "properties", "additionalProperties", "required"):
			return []string{"object"}, nil
		case has(s, "items", "prefixItems", "minItems", "maxItems"):
			return []string{"array"}, nil
		case has(s, "minLength", "maxLength", "pattern", "format"):
			return []string{"string"}, nil
		case has(s, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
			return []string{"number"}, nil
		}
		return []string{"object", "array", "string", "number", "boolean", "null"}, nil
	}
	var types []string
	switch t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if xs, ok := x.(string); ok {
				types = append(types, xs)
			}
		}
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("%w: JSON Schema type at %s is not a name or a list of names", ErrInvalid, path)
	}
	return types, nil
}

func has(s *object, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s.get(k); ok {
			return true
		}
	}
	return false
}

func (c *schemaCompiler) typed(t string, s *object, path string) (*node, error) {
	switch t {
	case "null":
		return lit("null"), nil
	case "boolean":
		return alt(lit("true"), lit("false")), nil
	case "string":
		return c.str(s, path)
	case "integer", "number":
		return c.number(s, path, t == "integer")
	case "array":
		return c.array(s, path)
	case "object":
		return c.obj(s, path)
	}
	return nil, fmt.Errorf("%w: JSON Schema type %q at %s", ErrInvalid, t, path)
}

// ref is the rule of a "$ref" within the document, made on first use.
func (c *schemaCompiler) ref(r, path string) (*node, error) {
	if i, ok := c.refs[r]; ok {
		return ref(i), nil
	}
	if r != "#" && !strings.HasPrefix(r, "#/") {
		return nil, unsupported(path, fmt.Sprintf("$ref %q (only references into the same document, #/...)", r))
	}
	target := c.doc
	if r != "#" {
		for _, part := range strings.Split(r[2:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			o, ok := target.(*object)
			if !ok {
				return nil, fmt.Errorf("%w: $ref %q at %s: no such schema", ErrInvalid, r, path)
			}
			if target, ok = o.get(part); !ok {
				return nil, fmt.Errorf("%w: $ref %q at %s: no such schema", ErrInvalid, r, path)
			}
		}
	}
	name := strings.Trim(strings.Map(func(x rune) rune {
		if x >= 'a' && x <= 'z' || x >= 'A' && x <= 'Z' || x >= '0' && x <= '9' {
			return x
		}
		return '-'
	}, r), "-")
	i := c.r.add("ref-"+name, nil)
	c.refs[r] = i
	n, err := c.schema(target, r)
	if err != nil {
		return nil, err
	}
	c.r.body[i] = n
	return ref(i), nil
}

// count reads a non-negative integer keyword (-1 when absent): a string's length or an
// array's items, both counted by calls up to maxLifted (lift.go).
func count(s *object, k, path string) (int, error) {
	limit := maxLifted
	v, ok := s.get(k)
	if !ok {
		return -1, nil
	}
	n, isNum := v.(json.Number)
	f, err := n.Float64() // 20000, 1e9 and 1e400 alike
	if !isNum || (err != nil && !math.IsInf(f, 0)) || f < 0 || f != math.Trunc(f) {
		return 0, fmt.Errorf("%w: JSON Schema %s at %s is not a non-negative integer", ErrInvalid, k, path)
	}
	i := int64(math.MaxInt64)
	if f < 1<<62 {
		i = int64(f)
	}
	switch upper := strings.HasPrefix(k, "max"); {
	case i <= int64(limit):
		return int(i), nil
	case upper && i >= noContextHolds:
		return -1, nil // no output of a context could reach it: no bound
	case upper:
		return 0, unsupported(path, fmt.Sprintf("%s %d (bounds up to %d are compiled, and from %d on, which no context holds, none is needed)", k, i, limit, noContextHolds))
	}
	return 0, unsupported(path, fmt.Sprintf("%s %d (at most %d)", k, i, limit))
}

// noContextHolds is a count of characters or items no model's context holds (each takes a
// token at least): a maximum from it on bounds nothing.
const noContextHolds = 1 << 24
