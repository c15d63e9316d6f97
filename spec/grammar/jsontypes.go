package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// The JSON types' grammars.

// jsonChar is one character of a JSON string body: any but ", \ and control characters, or
// an escape.
func jsonChar() *node {
	hex := alt(byteRange('0', '9'), byteRange('a', 'f'), byteRange('A', 'F'))
	return alt(runeClass(jsonSafe([]rune{0, utf8.MaxRune})),
		seq(lit(`\`), alt(lit(`"`), lit(`\`), lit("/"), lit("b"), lit("f"), lit("n"), lit("r"), lit("t"), seq(lit("u"), rep(hex, 4, 4)))))
}

func (c *schemaCompiler) rule(name string, body func() *node) int {
	if i, ok := c.free[name]; ok {
		return i
	}
	i := c.r.add(name, nil)
	c.free[name] = i
	c.r.body[i] = body()
	return i
}

// char is one string character, inline rather than a rule: a string's characters then belong
// to the string's own automaton, whose masks are context-free but for the closing quote.
func (c *schemaCompiler) char() *node {
	if c.charNode == nil {
		c.charNode = jsonChar()
	}
	return c.charNode
}

// freeValue is any JSON value (json_object's objects hold them).
func (c *schemaCompiler) freeValue() *node {
	if i, ok := c.free["value"]; ok {
		return ref(i)
	}
	value := c.r.add("value", nil)
	c.free["value"] = value
	str := ref(c.rule("string", func() *node { return seq(lit(`"`), star(c.char()), lit(`"`)) }))
	num := ref(c.rule("number", func() *node { return numberNode(false) }))
	ws := c.ws
	member := seq(str, ws, lit(":"), ws, ref(value))
	obj := c.rule("object", func() *node {
		return seq(lit("{"), ws, opt(seq(member, star(seq(ws, lit(","), ws, member)), ws)), lit("}"))
	})
	arr := c.rule("array", func() *node {
		return seq(lit("["), ws, opt(seq(ref(value), star(seq(ws, lit(","), ws, ref(value))), ws)), lit("]"))
	})
	c.r.body[value] = alt(ref(obj), ref(arr), str, num, lit("true"), lit("false"), lit("null"))
	return ref(value)
}

// numberNode is a JSON number (integer: no fraction or exponent), at most maxDigits digits
// before the point and after it.
func numberNode(integer bool) *node {
	n := seq(opt(lit("-")), alt(lit("0"), seq(byteRange('1', '9'), rep(digit, 0, maxDigits-1))))
	if integer {
		return n
	}
	return seq(n, opt(seq(lit("."), rep(digit, 1, maxDigits))), opt(seq(alt(lit("e"), lit("E")), opt(alt(lit("+"), lit("-"))), rep(digit, 1, 3))))
}

// label is a host name's label: letters, digits and inner hyphens.
const label = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,20}[a-zA-Z0-9])?`

// formats are the string formats written (as patterns); other formats are annotations, and
// their strings are free. Each pattern writes a part of its format's language that the
// validators applications use accept too: times in UTC ("Z", as zod's datetime() wants by
// default), version-4 UUIDs (zod 4's uuid() wants a version and the RFC's variant), e-mail
// local parts without "%" (zod's email()).
var formats = map[string]string{
	"date":      `\d{4}-(?:(?:01|03|05|07|08|10|12)-(?:0[1-9]|[12]\d|3[01])|(?:04|06|09|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8]))`,
	"time":      `(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})?Z`,
	"uuid":      `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`,
	"email":     `[a-zA-Z0-9_+-]{1,15}(?:\.[a-zA-Z0-9_+-]{1,15}){0,3}@` + label + `(?:\.` + label + `){0,3}\.[a-zA-Z]{2,10}`,
	"hostname":  label + `(?:\.` + label + `){0,3}`,
	"uri":       `https?://` + label + `(?:\.` + label + `){0,3}(?:/[a-zA-Z0-9._~-]{1,30}){0,4}`,
	"ipv4":      `(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`,
	"date-time": "",
}

func init() { formats["date-time"] = formats["date"] + "T" + formats["time"] }

func (c *schemaCompiler) str(s *object, path string) (*node, error) {
	lo, err := count(s, "minLength", path)
	if err != nil {
		return nil, err
	}
	hi, err := count(s, "maxLength", path)
	if err != nil {
		return nil, err
	}
	p, hasP := s.get("pattern")
	f, hasF := s.get("format")
	fs, _ := f.(string)
	if re, known := formats[fs]; hasF && known {
		if ps, isStr := p.(string); !hasP {
			p, hasP = re, true
		} else if isStr {
			within, err := formatWithin(re, ps, c.r.budget)
			if err != nil {
				return nil, err
			}
			if within { // the format's strings keep to the pattern (within.go)
				p = re
			}
		}
	}
	if hasP {
		ps, ok := p.(string)
		if !ok {
			return nil, fmt.Errorf("%w: JSON Schema pattern at %s is not a string", ErrInvalid, path)
		}
		if lo >= 0 || hi >= 0 {
			return nil, unsupported(path, "pattern or format with minLength or maxLength")
		}
		n, err := regexNode(ps, true)
		if err != nil {
			return nil, fmt.Errorf("JSON Schema pattern at %s: %w", path, err)
		}
		return seq(lit(`"`), n, lit(`"`)), nil
	}
	if lo < 0 && hi < 0 {
		return ref(c.rule("string", func() *node { return seq(lit(`"`), star(c.char()), lit(`"`)) })), nil
	}
	lo = max(lo, 0)
	if hi >= 0 && hi < lo {
		return nil, unsupported(path, fmt.Sprintf("minLength %d above maxLength %d", lo, hi))
	}
	return seq(lit(`"`), rep(c.char(), lo, hi), lit(`"`)), nil
}

// bound reads a numeric keyword (ok false when absent).
func bound(s *object, k, path string) (float64, bool, error) {
	v, ok := s.get(k)
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	f, err := n.Float64()
	if !isNum || (err != nil && !math.IsInf(f, 0)) {
		return 0, false, fmt.Errorf("%w: JSON Schema %s at %s is not a number", ErrInvalid, k, path)
	}
	// A bound of any size is taken (zod's int() writes ±(2^53 - 1)); one past what an
	// unbounded value may be written with (maxDigits digits) bounds nothing more.
	return max(-maxBound, min(maxBound, f)), true, nil
}

// number is an integer or number. With bounds, the values written keep within the integer
// bounds inside them (a minimum of 0.5 writes values from 1): integers, and for numbers
// also decimals n.f whose integer part n and n+1 (or, negative, -n-1 and -n) are in range.
func (c *schemaCompiler) number(s *object, path string, integer bool) (*node, error) {
	var lo, hi int64
	var hasLo, hasHi bool
	for _, b := range []struct {
		k        string
		low, exc bool
	}{{"minimum", true, false}, {"exclusiveMinimum", true, true}, {"maximum", false, false}, {"exclusiveMaximum", false, true}} {
		f, ok, err := bound(s, b.k, path)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if b.low {
			v := int64(math.Ceil(f))
			if b.exc && float64(v) == f {
				v++
			}
			if !hasLo || v > lo {
				lo, hasLo = v, true
			}
		} else {
			v := int64(math.Floor(f))
			if b.exc && float64(v) == f {
				v--
			}
			if !hasHi || v < hi {
				hi, hasHi = v, true
			}
		}
	}
	if !hasLo && !hasHi {
		return ref(c.rule(map[bool]string{true: "integer", false: "number"}[integer], func() *node { return numberNode(integer) })), nil
	}
	ints := intRange(lo, hi, hasLo, hasHi)
	alts := []*node{}
	if ints != nil {
		alts = append(alts, ints)
	}
	if !integer {
		frac := seq(lit("."), rep(digit, 0, maxDigits-1), byteRange('1', '9'))
		// n.f >= 0: lo <= n, n + 1 <= hi
		if n := intRange(max(lo, 0), hi-1, true, hasHi); n != nil {
			alts = append(alts, seq(n, frac))
		}
		// -(n.f) < 0: -(n+1) >= lo, -n <= hi
		if !hasLo || lo < 0 {
			a := int64(0)
			if hasHi && hi < 0 {
				a = -hi
			}
			if n := natRange(a, -lo-1, hasLo); n != nil {
				alts = append(alts, seq(lit("-"), n, frac))
			}
		}
	}
	if len(alts) == 0 {
		return nil, unsupported(path, "bounds that hold no value the engine writes (it writes integers within them, and decimals between two such)")
	}
	return alt(alts...), nil
}

func (c *schemaCompiler) array(s *object, path string) (*node, error) {
	lo, err := count(s, "minItems", path)
	if err != nil {
		return nil, err
	}
	hi, err := count(s, "maxItems", path)
	if err != nil {
		return nil, err
	}
	lo = max(lo, 0)
	ws := c.ws
	var prefix []*node
	if p, ok := s.get("prefixItems"); ok {
		subs, _ := p.([]any)
		for i, sub := range subs {
			n, err := c.schema(sub, fmt.Sprintf("%s/prefixItems/%d", path, i))
			if err != nil {
				return nil, err
			}
			prefix = append(prefix, n)
		}
	}
	var item *node
	if it, ok := s.get("items"); ok {
		if it == false {
			hi = len(prefix)
		} else if item, err = c.schema(it, path+"/items"); err != nil {
			return nil, err
		}
	} else {
		item = c.freeValue()
		if len(prefix) > 0 { // items unsaid after a tuple: the tuple alone is written
			hi = len(prefix)
		}
	}
	if hi >= 0 && hi < lo {
		return nil, unsupported(path, fmt.Sprintf("minItems %d above maxItems %d", lo, hi))
	}
	// elems(i): the items from index i on, i already written (i > 0 needs a comma first).
	var elems func(i int) *node
	elems = func(i int) *node {
		sep := func(n *node) *node {
			if i == 0 {
				return n
			}
			return seq(ws, lit(","), ws, n)
		}
		if i < len(prefix) {
			rest := seq(sep(prefix[i]), elems(i+1))
			if i >= lo {
				return opt(rest)
			}
			return rest
		}
		if hi >= 0 && i >= hi {
			return empty()
		}
		more := -1
		if hi >= 0 {
			more = hi - i - 1
		}
		first := sep(item)
		need := max(lo-i-1, 0)
		items := rep(seq(ws, lit(","), ws, item), need, more)
		items.splits = true // each item follows its own comma, and JSON values parse one way
		rest := seq(first, items)
		if i >= lo {
			return opt(rest)
		}
		return rest
	}
	return seq(lit("["), ws, elems(0), ws, lit("]")), nil
}

func (c *schemaCompiler) obj(s *object, path string) (*node, error) {
	ws := c.ws
	props, _ := s.get("properties")
	po, _ := props.(*object)
	required := map[string]bool{}
	if r, ok := s.get("required"); ok {
		rl, _ := r.([]any)
		for _, k := range rl {
			if ks, ok := k.(string); ok {
				required[ks] = true
			}
		}
	}
	if po == nil || len(po.keys) == 0 {
		if len(required) > 0 {
			return nil, unsupported(path, "required properties without their schemas in properties")
		}
		ap, ok := s.get("additionalProperties")
		if ok && ap == false {
			return seq(lit("{"), ws, lit("}")), nil
		}
		val := c.freeValue()
		if ok && ap != true {
			var err error
			if val, err = c.schema(ap, path+"/additionalProperties"); err != nil {
				return nil, err
			}
		}
		key := ref(c.rule("string", func() *node { return seq(lit(`"`), star(c.char()), lit(`"`)) }))
		member := seq(key, ws, lit(":"), ws, val)
		return seq(lit("{"), ws, opt(seq(member, star(seq(ws, lit(","), ws, member)), ws)), lit("}")), nil
	}
	for k := range required {
		if _, ok := po.get(k); !ok {
			return nil, unsupported(path, fmt.Sprintf("required property %q without a schema in properties", k))
		}
	}
	kvs := make([]*node, len(po.keys))
	for i, k := range po.keys {
		v, err := c.schema(po.m[k], path+"/properties/"+k)
		if err != nil {
			return nil, err
		}
		kvs[i] = seq(lit(marshal(k)), ws, lit(":"), ws, v)
	}
	// rest(i, first): the properties from i on; first: none written yet (no comma before).
	// Each (i, first) is a rule of its own, so optional properties cost linear size.
	memo := map[[2]int]int{}
	var rest func(i int, first bool) *node
	rest = func(i int, first bool) *node {
		if i == len(kvs) {
			return empty()
		}
		f := 0
		if first {
			f = 1
		}
		if r, ok := memo[[2]int{i, f}]; ok {
			return ref(r)
		}
		r := c.r.add("props", nil)
		memo[[2]int{i, f}] = r
		kv := kvs[i]
		if !first {
			kv = seq(ws, lit(","), ws, kv)
		}
		with := seq(kv, rest(i+1, false))
		if required[po.keys[i]] {
			c.r.body[r] = with
		} else {
			c.r.body[r] = alt(with, rest(i+1, first))
		}
		return ref(r)
	}
	return seq(lit("{"), ws, rest(0, true), ws, lit("}")), nil
}
