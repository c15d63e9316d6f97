// Package grammar is structured outputs: JSON schemas, free JSON, regular expressions, a
// choice among strings and GBNF grammars compiled into a pushdown automaton over bytes, and
// the mask of the tokens of a vocabulary that may come next at each point of an output.
//
// Compile translates a Spec into rules (each an expression over bytes and calls of rules),
// compiles each rule into a deterministic automaton, and binds the result to a Vocab. A
// Matcher follows one output: Mask gives the allowed tokens (as a bitmask, word t/32 bit
// t%32) and whether the output may end; Accept moves past a token. Masks are computed as
// xgrammar does, in two parts: for each automaton state, once per grammar, a walk of the
// vocabulary's trie finds the tokens that the state's rule reads without returning (they
// are allowed whatever the stack below) and those that return from it (unc); only the
// latter are checked against the whole stack when a mask is asked for (token by token, or by
// one walk of the trie with the whole stack when they are most of the vocabulary). A grammar
// keeps the masks of the whole states its matchers have seen, for the next request.
package grammar

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
)

// Kind is what a Spec constrains the output to.
type Kind string

const (
	JSONSchema Kind = "json_schema" // Text: a JSON Schema
	JSONObject Kind = "json_object" // any JSON object
	Regex      Kind = "regex"       // Text: an RE2 regular expression, matched whole
	Choice     Kind = "choice"      // Choices: the output is one of them
	GBNF       Kind = "grammar"     // Text: a GBNF grammar (llama.cpp's, xgrammar's EBNF)
)

// Spec is a request's structured output.
type Spec struct {
	Kind    Kind
	Text    string
	Choices []string
}

// Limits on a spec's size, checked where it enters.
const (
	MaxText    = 1 << 20
	MaxChoices = 10000
)

// Validate checks a spec's shape (not that it compiles).
func (s Spec) Validate() error {
	switch s.Kind {
	case JSONSchema, Regex, GBNF:
		if strings.TrimSpace(s.Text) == "" {
			return fmt.Errorf("%w: an empty %s", ErrInvalid, s.Kind)
		}
		if len(s.Text) > MaxText {
			return fmt.Errorf("%w: a %s of %d bytes (at most %d)", ErrInvalid, s.Kind, len(s.Text), MaxText)
		}
	case JSONObject:
	case Choice:
		if len(s.Choices) == 0 || len(s.Choices) > MaxChoices {
			return fmt.Errorf("%w: a choice of %d strings (1..%d)", ErrInvalid, len(s.Choices), MaxChoices)
		}
		for _, c := range s.Choices {
			if c == "" {
				return fmt.Errorf("%w: an empty string among the choices", ErrInvalid)
			}
		}
	default:
		return fmt.Errorf("%w: structured output kind %q", ErrInvalid, s.Kind)
	}
	return nil
}

func (s Spec) key() string {
	return string(s.Kind) + "\x00" + s.Text + "\x00" + strings.Join(s.Choices, "\x00")
}

// Compile compiles spec for vocabulary v (CompileContext without a context to end it).
func Compile(s Spec, v *Vocab) (*Grammar, error) {
	return CompileContext(context.Background(), s, v)
}

// CompileContext compiles spec for vocabulary v within a budget of work and time (budget.go),
// stopping when ctx ends.
func CompileContext(ctx context.Context, s Spec, v *Vocab) (*Grammar, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	b := newBudget(ctx)
	var (
		r    *rules
		root int
		err  error
	)
	switch s.Kind {
	case JSONSchema:
		r, root, err = jsonSchemaRules([]byte(s.Text), b)
	case JSONObject:
		r, root = freeObjectRules()
	case Regex:
		var n *node
		if n, err = regexNode(s.Text, false); err == nil {
			r = newRules()
			root = r.add("root", n)
		}
	case Choice:
		var alts []*node
		for _, c := range s.Choices {
			alts = append(alts, lit(c))
		}
		r = newRules()
		root = r.add("root", alt(alts...))
	case GBNF:
		r, root, err = gbnfRules(s.Text)
	}
	if err != nil {
		return nil, err
	}
	r.budget = b
	return build(r, root, v, s.key())
}

// Cache keeps the most recently used compiled grammars of one vocabulary (with the masks
// their states have computed), so that requests with the same schema compile it once: at
// most n of them, and about MaxCacheBytes together (Grammar.Bytes), the least recently used
// dropped first.
type Cache struct {
	v        *Vocab
	n        int
	maxBytes int
	mu       sync.Mutex
	lru      *list.List // of *Grammar, most recent first
	at       map[string]*list.Element
}

// MaxCacheBytes bounds a Cache's grammars together, masks included (the one just compiled is
// kept whatever its size).
const MaxCacheBytes = 256 << 20

// NewCache keeps up to n grammars of vocabulary v.
func NewCache(v *Vocab, n int) *Cache {
	return &Cache{v: v, n: max(n, 1), maxBytes: MaxCacheBytes, lru: list.New(), at: map[string]*list.Element{}}
}

// Vocab is the cache's vocabulary.
func (c *Cache) Vocab() *Vocab { return c.v }

// Get returns spec compiled, from the cache or compiled now (CompileContext, ended by ctx).
func (c *Cache) Get(ctx context.Context, s Spec) (*Grammar, error) {
	k := s.key()
	c.mu.Lock()
	if e, ok := c.at[k]; ok {
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*Grammar), nil
	}
	c.mu.Unlock()
	g, err := CompileContext(ctx, s, c.v)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.at[k]; ok { // compiled meanwhile by another request
		return e.Value.(*Grammar), nil
	}
	c.at[k] = c.lru.PushFront(g)
	total := 0
	for e := c.lru.Front(); e != nil; e = e.Next() {
		total += e.Value.(*Grammar).Bytes()
	}
	for c.lru.Len() > c.n || (total > c.maxBytes && c.lru.Len() > 1) {
		old := c.lru.Remove(c.lru.Back()).(*Grammar)
		delete(c.at, old.source)
		total -= old.Bytes()
	}
	return g, nil
}
