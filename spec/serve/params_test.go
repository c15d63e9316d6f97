package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/wspec/wspec/spec/engine"
)

// Each of engine.SamplingParams reaches the engine from a chat or completions body by its
// name, and through the Responses API's pass-through; a value of the wrong type is a 400
// naming it; a name the request leaves out takes the model's generation config, else OpenAI's
// default.
func TestSamplingParamsInRequests(t *testing.T) {
	for i := range engine.SamplingParams {
		p := &engine.SamplingParams[i]
		body := fmt.Sprintf(`{"prompt": "x", %q: %v}`, p.Name, p.Example)
		var f samplingFields
		if err := readSampling([]byte(body), &f); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		s := &Server{cfg: Config{Defaults: SamplingDefaults{}}}
		got, err := s.sampling(f.params)
		want := engine.Sampling{}
		for j := range engine.SamplingParams {
			q := &engine.SamplingParams[j]
			v := q.ServerDefault
			if q == p {
				v = p.Example
			}
			if err := q.Set(&want, v); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: sampling %+v, want %+v (%v)", body, got, want, err)
		}
		if p.GenerationConfig {
			s.cfg.Defaults[p.Name] = p.Example
			if got, err := s.sampling(nil); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s from the generation config: %+v, want %+v (%v)", p.Name, got, want, err)
			}
		}

		var rr responsesRequest
		rb := fmt.Sprintf(`{"input": "hi", %q: %v}`, p.Name, p.Example)
		if err := json.Unmarshal([]byte(rb), &rr); err != nil {
			t.Fatal(err)
		}
		if err := readSampling([]byte(rb), &rr); err != nil {
			t.Fatal(err)
		}
		_, chat, err := (&Server{responses: newResponseStore(1, 1<<20)}).responsesToChat(&rr)
		var m map[string]any
		if err != nil || json.Unmarshal(chat, &m) != nil || m[p.Name] != p.Example {
			t.Errorf("%s through the Responses API: %s (%v)", p.Name, chat, err)
		}

		bad := fmt.Sprintf(`{%q: "x"}`, p.Name)
		var ae *apiError
		if err := readSampling([]byte(bad), &f); !errors.As(err, &ae) || ae.Param != p.Name || ae.Code != codeInvalidType {
			t.Errorf("%s: %v, want a 400 naming it", bad, err)
		}
	}
	var f samplingFields
	if err := readSampling([]byte(`{"top_k": 2.5}`), &f); err == nil {
		t.Error("top_k 2.5 was read")
	}
	if u := unknownFields([]byte(`{"min_p": 0.1, "mn_p": 1}`), &chatRequest{}); len(u) != 1 || u[0] != `"mn_p"` {
		t.Errorf("unknown fields %v, want mn_p alone", u)
	}
}
