package serve

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/wspec/wspec/spec/engine"
)

// samplingParams are a request's values of the scalar sampling parameters engine.SamplingParams
// declares (temperature, top_p, top_k, min_p, the penalties), by name: those it gave, not null.
// The request types that take them say so (sampledRequest), and decodeBody reads them.
type samplingParams map[string]float64

// sampledRequest is a request type whose body may carry engine.SamplingParams.
type sampledRequest interface{ samplingParams() *samplingParams }

// decodeSampling reads the declared sampling parameters of body, a JSON object: each a
// number, an integer where declared, or null (unset). Their ranges are the engine's check.
func decodeSampling(body []byte) (samplingParams, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, jsonError(err)
	}
	out := samplingParams{}
	for i := range engine.SamplingParams {
		p := &engine.SamplingParams[i]
		raw, ok := obj[p.Name]
		if !ok || string(raw) == "null" {
			continue
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			want := "a number"
			if p.Int {
				want = "an integer"
			}
			return nil, invalid(p.Name, codeInvalidType, "%s: want %s, got %s", p.Name, want, strings.TrimSpace(string(raw)))
		}
		if p.Int && (v != math.Trunc(v) || math.Abs(v) > math.MaxInt32) {
			return nil, invalid(p.Name, codeInvalidType, "%s: want an integer, got %s", p.Name, strings.TrimSpace(string(raw)))
		}
		out[p.Name] = v
	}
	return out, nil
}

// readSampling fills the sampling parameters of v, when it is a sampledRequest, from body.
func readSampling(body []byte, v any) error {
	sr, ok := v.(sampledRequest)
	if !ok {
		return nil
	}
	p, err := decodeSampling(body)
	if err != nil {
		return err
	}
	*sr.samplingParams() = p
	return nil
}

// sampling is the request's sampling: each declared parameter as the request gave it, else
// the server's default (a model's generation config: Config.Defaults), else the parameter's
// ServerDefault (OpenAI's).
func (s *Server) sampling(given samplingParams) (engine.Sampling, error) {
	var out engine.Sampling
	for i := range engine.SamplingParams {
		p := &engine.SamplingParams[i]
		v, ok := given[p.Name]
		if !ok {
			if v, ok = s.cfg.Defaults[p.Name]; !ok {
				v = p.ServerDefault
			}
		}
		if err := p.Set(&out, v); err != nil {
			return out, err
		}
	}
	return out, nil
}
