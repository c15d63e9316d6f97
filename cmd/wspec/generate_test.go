package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/engine"
)

// Flags a user can get wrong are refused before any model loads (none is needed here), with
// a message naming the flag; --help is not an error.
func TestGenerateFlags(t *testing.T) {
	if code := run([]string{"generate", "--help"}); code != 0 {
		t.Fatalf("generate --help exited %d", code)
	}
	if code := run([]string{"--help"}); code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"-k", "3", "hi"}, "without --speculative-mode"},
		{[]string{"--num-speculative-tokens", "3", "hi"}, "without --speculative-mode"},
		{[]string{"--draft-model", "/x", "hi"}, "without --speculative-mode"},
		{[]string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":2}`, "--speculative-mode", "ngram", "hi"}, "conflicts with --speculative-config"},
		{[]string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":2}`, "-k", "5", "hi"}, "conflicts with --speculative-config"},
		{[]string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":2}`, "--draft-model", "/x", "hi"}, "conflicts with --speculative-config"},
		{[]string{"--speculative-config", `{"method":"ngram","nope":1}`, "hi"}, "unknown field"},
		{[]string{"--speculative-mode", "ngram", "-k", "0", "hi"}, "num_speculative_tokens 0"},
		{[]string{"--speculative-mode", "ngram", "-k", "16", "hi"}, "num_speculative_tokens 16"},
		{[]string{"--speculative-mode", "telepathy", "hi"}, "unknown method"},
		{[]string{"--max-tokens", "-3", "hi"}, "max_tokens -3"},
		{[]string{"--temperature", "-1", "hi"}, "temperature"},
		{[]string{"--temperature", "NaN", "hi"}, "temperature"},
		{[]string{"--temperature", "+Inf", "hi"}, "temperature"},
		{[]string{"--top-p", "1.5", "hi"}, "top_p"},
		{[]string{"--top-p", "-0.5", "hi"}, "top_p"},
		{[]string{"--top-k", "-2", "hi"}, "top_k"},
		{[]string{}, "no prompt"},
	}
	for _, tc := range bad {
		err := runGenerate(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("generate %q: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// Each of engine.SamplingParams is a flag of `wspec generate` (its name with dashes) that
// sets it, at the parameter's Default when not given.
func TestGenerateSamplingFlags(t *testing.T) {
	for i := range engine.SamplingParams {
		p := &engine.SamplingParams[i]
		fs := pflag.NewFlagSet("generate", pflag.ContinueOnError)
		read := addSamplingFlags(fs)
		if err := fs.Parse([]string{"--" + p.FlagName(), fmt.Sprint(p.Example)}); err != nil {
			t.Fatal(err)
		}
		got, err := read()
		want := engine.DefaultSampling()
		p.Set(&want, p.Example)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("--%s %v: %+v, want %+v (%v)", p.FlagName(), p.Example, got, want, err)
		}
	}
	fs := pflag.NewFlagSet("generate", pflag.ContinueOnError)
	read := addSamplingFlags(fs)
	if got, err := read(); err != nil || fmt.Sprint(got) != fmt.Sprint(engine.DefaultSampling()) {
		t.Errorf("no flags: %+v (%v)", got, err)
	}
}
