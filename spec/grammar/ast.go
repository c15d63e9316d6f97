package grammar

import "fmt"

// A grammar is a list of rules, each an expression over bytes and references to rules (so
// rules may recurse: JSON's values, a GBNF grammar). Every source (JSON Schema, a regular
// expression, a choice, GBNF) is translated into this form, then compiled (compile.go).

type kind uint8

const (
	kEmpty  kind = iota // matches ""
	kBytes              // the bytes lit
	kRange              // one byte in [lo, hi]
	kSeq                // kids in order
	kAlt                // one of kids
	kRepeat             // kids[0], min..max times (max < 0: unbounded)
	kRef                // rule
)

type node struct {
	k        kind
	lit      []byte
	lo, hi   byte
	kids     []*node
	min, max int
	rule     int
	// splits, on a repetition, says its body's words split a text of them one way only,
	// which its maker knows (JSON's comma-separated items): lift.go may call the body.
	splits bool
}

func empty() *node                  { return &node{k: kEmpty} }
func lit(s string) *node            { return &node{k: kBytes, lit: []byte(s)} }
func byteRange(lo, hi byte) *node   { return &node{k: kRange, lo: lo, hi: hi} }
func ref(rule int) *node            { return &node{k: kRef, rule: rule} }
func opt(n *node) *node             { return rep(n, 0, 1) }
func star(n *node) *node            { return rep(n, 0, -1) }
func rep(n *node, lo, hi int) *node { return &node{k: kRepeat, kids: []*node{n}, min: lo, max: hi} }

func seq(kids ...*node) *node {
	if len(kids) == 1 {
		return kids[0]
	}
	return &node{k: kSeq, kids: kids}
}

func alt(kids ...*node) *node {
	if len(kids) == 1 {
		return kids[0]
	}
	return &node{k: kAlt, kids: kids}
}

// rules is a grammar under construction: rule i is named names[i] and defined by body[i].
type rules struct {
	names  []string
	body   []*node
	byName map[string]int
	suffix map[string]int // the next number to try after a base name that is taken
	budget *budget        // the compile's bound as a whole (nil: none)
}

func newRules() *rules { return &rules{byName: map[string]int{}, suffix: map[string]int{}} }

// named returns the rule called name, declaring it (undefined) when new.
func (r *rules) named(name string) int {
	if i, ok := r.byName[name]; ok {
		return i
	}
	r.names = append(r.names, name)
	r.body = append(r.body, nil)
	r.byName[name] = len(r.names) - 1
	return len(r.names) - 1
}

// add defines a new rule, its name made unique from base.
func (r *rules) add(base string, body *node) int {
	name := base
	for {
		if _, taken := r.byName[name]; !taken {
			break
		}
		// each base name remembers where its numbering stopped, so that many rules of one
		// base cost linear time, not quadratic
		i := max(r.suffix[base], 2)
		r.suffix[base] = i + 1
		name = fmt.Sprintf("%s-%d", base, i)
	}
	i := r.named(name)
	r.body[i] = body
	return i
}

// maxRepeat bounds the count of a bounded repetition ({m,n}) compiled as copies of its body
// (a prefix-free body is called instead, up to maxLifted times: lift.go).
const maxRepeat = 10000
