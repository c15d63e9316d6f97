package serve

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
)

// validator is the tests' main server (stories15M, ngram speculation, the default chat
// template), whose requests' options the engine validates; validate never generates.
func validator(t testing.TB) *Server { return specServer(t).s }

// validate decodes and validates body as path's request; it never generates.
func (s *Server) validate(path string, body []byte) error {
	r := httptest.NewRequest("POST", path, bytes.NewReader(body))
	w := httptest.NewRecorder()
	if path == "/v1/completions" {
		var req completionRequest
		if err := s.decodeBody(w, r, &req); err != nil {
			return err
		}
		_, err := s.completionRequest(context.Background(), &req)
		return err
	}
	var req chatRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	_, err := s.chatRequest(context.Background(), &req)
	return err
}

var fuzzSeeds = []string{
	`{"model": "stories15M", "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "n": 2, "stop": ["\n", "The"], "seed": 5, "logit_bias": {"29871": -100}, "logprobs": 3, "stream": true, "stream_options": {"include_usage": true}, "speculative": {"num_speculative_tokens": 2, "fixed": true}}`,
	`{"model": "stories15M", "messages": [{"role": "system", "content": "Tell stories."}, {"role": "user", "content": [{"type": "text", "text": "A dragon."}]}], "max_completion_tokens": 16, "logprobs": true, "top_logprobs": 2, "min_p": 0.1, "presence_penalty": 1, "frequency_penalty": -1, "repetition_penalty": 1.2, "tool_choice": "none", "response_format": {"type": "text"}}`,
	`{"prompt": ["a", "b"], "best_of": 1, "echo": false, "suffix": "", "user": "u"}`,
}

// Nothing a client sends makes decoding or validation panic: every refusal is a 4xx error
// object. Mutations of valid requests (bytes flipped, cut, duplicated) stand in for a fuzzer;
// `go test -fuzz FuzzRequests ./spec/serve` runs the real one.
func TestMutatedRequests(t *testing.T) {
	s := validator(t)
	rng := rand.New(rand.NewPCG(1, 2))
	refused := 0
	for i := 0; i < 3000; i++ {
		b := []byte(fuzzSeeds[i%len(fuzzSeeds)])
		for m := 0; m < 1+rng.IntN(4) && len(b) > 0; m++ {
			j := rng.IntN(len(b))
			switch rng.IntN(4) {
			case 0:
				b[j] = byte(rng.IntN(256))
			case 1:
				b = b[:j]
			case 2:
				b = append(b[:j:j], append([]byte(`"}],{[-1e999`[rng.IntN(12):][:1]), b[j:]...)...)
			default:
				k := j + rng.IntN(len(b)-j)
				b = append(b[:k:k], b[j:]...)
			}
		}
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			if err := s.validate(path, b); err != nil {
				refused++
				var ae *apiError
				if !errors.As(err, &ae) || ae.Status >= 500 || ae.Message == "" {
					t.Fatalf("%s %q: %v", path, b, err)
				}
			}
		}
	}
	t.Logf("%d of 6000 mutated requests refused", refused)
}

func FuzzRequests(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	s := validator(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			if err := s.validate(path, body); err != nil {
				var ae *apiError
				if !errors.As(err, &ae) || ae.Status >= 500 {
					t.Fatalf("%s %q: %v", path, body, err)
				}
			}
		}
	})
}
