package engine

import (
	"math"
	"strings"
)

// SamplingParam declares one of the scalar sampling parameters every entry point takes by
// the same name: the OpenAI-compatible server (chat, completions, the Responses API's
// pass-through), a model's generation_config.json defaults, `wspec generate`'s flags and the
// browser API. Each front end reads SamplingParams; none names a parameter itself, and
// GenerateOptions.Validate checks each one's range here.
//
// Adding a parameter the sampler already has (a field of batch.Sampling with its kernel and
// reference): one entry below. The server (chat, completions, the Responses API's
// pass-through, generation_config.json), `wspec generate`'s flags and the browser API read it
// from there, and their tests set every entry's Example through each of them
// (TestSamplingParams here, TestSamplingParamsInRequests in spec/serve,
// TestGenerateSamplingFlags in cmd/wspec, TestGenerateSamplingParams in spec/web). Tried with a
// made-up top_a: that entry and the batch.Sampling field were the whole change.
type SamplingParam struct {
	Name string // the JSON name (vLLM's); `wspec generate`'s flag is Name with '-' for '_'
	Help string // what it does, in a few words
	Want string // its range, as help and errors say it: "min_p 2: want a value in [0, 1] (0 is off)"
	Int  bool   // an integer
	// Default is the value when unset in `wspec generate` and the browser API (greedy);
	// ServerDefault where an OpenAI request and the model's generation config leave it unset
	// (OpenAI's temperature 1).
	Default, ServerDefault float64
	// GenerationConfig says a model's generation_config.json may set the server's default
	// (vLLM's --generation-config auto).
	GenerationConfig bool
	// Example is a typical value, in range and not a default: what the front ends' tests set.
	Example float64
	// valid says whether v is in range for a model of vocab tokens (0: unknown yet).
	valid func(v float64, vocab int) bool
	// set stores an API value into s (where the API's spelling differs from the sampler's,
	// it translates); get reads it back.
	set func(s *Sampling, v float64)
	get func(s *Sampling) float64
}

// SamplingParams are the scalar sampling parameters, in the order help lists them.
var SamplingParams = []SamplingParam{
	{Name: "temperature", Example: 0.7, Help: "sampling temperature", Want: "a finite value >= 0 (0 is greedy)",
		ServerDefault: 1, GenerationConfig: true, valid: within(0, math.MaxFloat32),
		set: func(s *Sampling, v float64) { s.Temperature = float32(v) }, get: func(s *Sampling) float64 { return float64(s.Temperature) }},
	{Name: "top_p", Example: 0.9, Help: "keep the likeliest tokens holding this share of the probability", Want: "a value in [0, 1] (1 is off; 0 keeps the likeliest token alone)",
		Default: 1, ServerDefault: 1, GenerationConfig: true, valid: within(0, 1),
		set: func(s *Sampling, v float64) { s.TopP = apiTopP(float32(v)) }, get: func(s *Sampling) float64 { return float64(s.TopP) }},
	{Name: "top_k", Example: 40, Help: "keep the k likeliest tokens", Want: "-1 or 0 (off), or 1..the vocabulary size", Int: true,
		GenerationConfig: true, valid: func(v float64, vocab int) bool { return v >= -1 && (vocab == 0 || v <= float64(vocab)) },
		set: func(s *Sampling, v float64) { s.TopK = int(v) }, get: func(s *Sampling) float64 { return float64(s.TopK) }},
	{Name: "min_p", Example: 0.05, Help: "keep tokens at least this times as likely as the likeliest", Want: "a value in [0, 1] (0 is off)",
		GenerationConfig: true, valid: within(0, 1),
		set: func(s *Sampling, v float64) { s.MinP = float32(v) }, get: func(s *Sampling) float64 { return float64(s.MinP) }},
	{Name: "presence_penalty", Example: 0.5, Help: "subtracted from the logit of each token already generated", Want: "a value in [-2, 2]",
		valid: within(-2, 2),
		set:   func(s *Sampling, v float64) { s.PresencePenalty = float32(v) }, get: func(s *Sampling) float64 { return float64(s.PresencePenalty) }},
	{Name: "frequency_penalty", Example: 0.5, Help: "subtracted per occurrence among the generated tokens", Want: "a value in [-2, 2]",
		valid: within(-2, 2),
		set:   func(s *Sampling, v float64) { s.FrequencyPenalty = float32(v) }, get: func(s *Sampling) float64 { return float64(s.FrequencyPenalty) }},
	{Name: "repetition_penalty", Example: 1.1, Help: "divides positive (multiplies negative) logits of tokens seen", Want: "a value > 0 (1 is off)",
		Default: 1, ServerDefault: 1, GenerationConfig: true, valid: func(v float64, _ int) bool { return v == 0 || (v >= 1e-3 && v <= 1e6) },
		set: func(s *Sampling, v float64) { s.RepetitionPenalty = float32(v) }, get: func(s *Sampling) float64 { return float64(s.RepetitionPenalty) }},
}

// apiTopP is a top_p as every entry point takes it: 0 is the likeliest token alone
// (SmallestTopP), not "off" as the zero value of Sampling.TopP is.
func apiTopP(p float32) float32 {
	if p == 0 {
		return SmallestTopP
	}
	return p
}

// within is a range check, ends included (NaN is outside).
func within(lo, hi float64) func(float64, int) bool {
	return func(v float64, _ int) bool { return v >= lo && v <= hi }
}

// FlagName is the parameter's command-line flag.
func (p *SamplingParam) FlagName() string { return strings.ReplaceAll(p.Name, "_", "-") }

// Set stores v, a value as the APIs spell it, into s. It checks only the type: an integer
// parameter given a fraction is an error naming it; the range is Validate's.
func (p *SamplingParam) Set(s *Sampling, v float64) error {
	if p.Int && (v != math.Trunc(v) || math.Abs(v) > 1<<31) {
		return invalid(p.Name, "%s %v: want an integer, %s", p.Name, v, p.Want)
	}
	p.set(s, v)
	return nil
}

// Check says whether v, a value as the sampler takes it, is in the parameter's range for a
// model of vocab tokens (0: not known yet): an *InvalidError naming it if not.
func (p *SamplingParam) Check(v float64, vocab int) error {
	if !p.valid(v, vocab) {
		return invalid(p.Name, "%s %v: want %s", p.Name, v, p.Want)
	}
	return nil
}

// DefaultSampling is the sampling of `wspec generate` and the browser API where no parameter
// is given: every parameter's Default.
func DefaultSampling() Sampling {
	var s Sampling
	for i := range SamplingParams {
		p := &SamplingParams[i]
		p.set(&s, p.Default)
	}
	return s
}

// SamplingParamNamed is the declared parameter of that JSON name (nil for none).
func SamplingParamNamed(name string) *SamplingParam {
	for i := range SamplingParams {
		if SamplingParams[i].Name == name {
			return &SamplingParams[i]
		}
	}
	return nil
}
