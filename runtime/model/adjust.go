package model

import "github.com/wspec/wspec/runtime"

// Adjustments is a sequence's list of logit adjustments (SeqStep.Adj) kept up to date as it
// generates: its biased tokens, and when a penalty is on, the tokens of its prompt and those
// it generated with their counts. Each token is listed once.
type Adjustments struct {
	list      []runtime.Adj
	at        map[int]int // token -> its index in list
	penalized bool
}

// NewAdjustments lists bias (token -> added logit) and, when s has a penalty on, the tokens
// of prompt.
func NewAdjustments(s Sampling, bias map[int]float32, prompt []int) *Adjustments {
	a := &Adjustments{at: map[int]int{}, penalized: s.penalized()}
	for t, b := range bias {
		a.entry(t).Bias = b
	}
	if a.penalized {
		for _, t := range prompt {
			a.entry(t).Prompt = 1
		}
	}
	return a
}

func (a *Adjustments) entry(t int) *runtime.Adj {
	i, ok := a.at[t]
	if !ok {
		i = len(a.list)
		a.at[t] = i
		a.list = append(a.list, runtime.Adj{Token: uint32(t)})
	}
	return &a.list[i]
}

// Generated counts tokens the sequence generated (the penalties' counts).
func (a *Adjustments) Generated(tokens ...int) {
	if !a.penalized {
		return
	}
	for _, t := range tokens {
		a.entry(t).Count++
	}
}

// List is the list to pass as SeqStep.Adj (valid until the next Generated).
func (a *Adjustments) List() []runtime.Adj { return a.list }
