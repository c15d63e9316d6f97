package batch

// Sampling is how a sequence's tokens are drawn: temperature and truncation, the logits
// processors, logprobs and the random key. It is the one struct that carries these values
// from where a request enters (spec/engine validates it there, once) down to the device's
// per-sequence block; nothing below re-checks it. The zero value is greedy decoding with
// every processor off.
type Sampling struct {
	Temperature float32 // 0: greedy; otherwise > 0
	TopK        int     // keep the TopK likeliest tokens; 0: off
	TopP        float32 // keep the likeliest tokens holding TopP of the mass, in (0, 1]; 0 or 1: off
	MinP        float32 // keep tokens with p >= MinP x the likeliest one's, in [0, 1]; 0: off
	// The random key: Seed, and Choice, which tells apart generations of one prompt and seed
	// (OpenAI's n). A token's randomness is keyed by (Seed, Choice, position), so a seeded
	// generation is reproducible, alone or batched, with or without speculation.
	Seed   uint64
	Choice uint32
	// Logits processors, applied before temperature and truncation, in vLLM's order: the
	// bias, then the penalties (0, 0 and 0 or 1 are off).
	PresencePenalty   float32         // subtracted once from each token generated so far
	FrequencyPenalty  float32         // subtracted per occurrence among the generated tokens
	RepetitionPenalty float32         // divides positive (multiplies negative) logits of prompt and generated tokens
	LogitBias         map[int]float32 // token id -> added to its logit
	// Logprobs asks for each emitted token's log-probability (of the processed logits at
	// temperature 1, before truncation), and TopLogprobs (0..MaxTopLogprobs) for its row's
	// likeliest tokens too.
	Logprobs    bool
	TopLogprobs int
}

// MaxTopLogprobs is the most likeliest tokens a row's logprobs list.
const MaxTopLogprobs = 20

// Penalized reports whether a penalty is on.
func (s Sampling) Penalized() bool {
	return s.PresencePenalty != 0 || s.FrequencyPenalty != 0 || (s.RepetitionPenalty != 0 && s.RepetitionPenalty != 1)
}

// Greedy reports whether tokens are the argmax of the processed logits.
func (s Sampling) Greedy() bool { return s.Temperature == 0 }

// Adj mirrors common.wgsl's Adj: a logit adjustment of one token of a sequence.
type Adj struct {
	Token  uint32
	Count  uint32  // occurrences among the tokens generated before the step
	Prompt uint32  // 1: the token is in the prompt
	Bias   float32 // added to its logit
}

// Adjustments is a sequence's list of logit adjustments (SeqStep.Adj) kept up to date as it
// generates: its biased tokens, and when a penalty is on, the tokens of its prompt and those
// it generated with their counts. Each token is listed once.
type Adjustments struct {
	list      []Adj
	at        map[int]int // token -> its index in list
	penalized bool
	bias      map[int]float32 // the request's logit bias
	banned    bool            // Ban is in force
}

// Banned is the bias that keeps a token from being drawn (vLLM's min_tokens holds back the
// end-of-sequence and stop tokens with it): after it, no finite logit is lower, and the
// token's probability is exactly 0. (A finite value: WGSL may assume there are no infinities.)
const Banned = -1e30

// NewAdjustments lists s's logit bias and, when s has a penalty on, the tokens of prompt.
func NewAdjustments(s Sampling, prompt []int) *Adjustments {
	a := &Adjustments{at: map[int]int{}, penalized: s.Penalized(), bias: s.LogitBias}
	for t, b := range s.LogitBias {
		a.entry(t).Bias = b
	}
	if a.penalized {
		for _, t := range prompt {
			a.entry(t).Prompt = 1
		}
	}
	return a
}

func (a *Adjustments) entry(t int) *Adj {
	i, ok := a.at[t]
	if !ok {
		i = len(a.list)
		a.at[t] = i
		a.list = append(a.list, Adj{Token: uint32(t)})
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

// Ban holds back tokens (with the bias Banned, on top of their logit bias) while on, and
// gives them back their logit bias when called with on false.
func (a *Adjustments) Ban(tokens []int, on bool) {
	if on == a.banned {
		return
	}
	a.banned = on
	for _, t := range tokens {
		b := a.bias[t]
		if on {
			b += Banned
		}
		a.entry(t).Bias = b
	}
}

// List is the list to pass as SeqStep.Adj (valid until the next Generated).
func (a *Adjustments) List() []Adj { return a.list }
