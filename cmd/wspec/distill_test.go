package main

import (
	"strings"
	"testing"
)

// `wspec distill train` refuses out-of-range flags before it reads a model or data.
func TestDistillTrainFlags(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--train-vocab=-5", "--train-vocab -5"},
		{"--noise=-1", "--noise -1"},
		{"--noise=NaN", "--noise NaN"},
		{"--depth1-epochs=-2", "--depth1-epochs -2"},
		{"--weight-decay=+Inf", "--weight-decay +Inf"},
	} {
		err := runDistillTrain([]string{"--data", "nope", "--out", t.TempDir() + "/x", tc.flag})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.flag, err, tc.want)
		}
	}
}

// `wspec distill eval` refuses out-of-range flags before it reads a model.
func TestDistillEvalFlags(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--max-new=0", "--max-new 0"}, {"--max-new=-3", "--max-new -3"},
		{"--k-max=0", "--k-max 0"}, {"--k-max=99", "--k-max 99"},
	} {
		if err := runDistillEval([]string{"--dir", t.TempDir(), tc.flag}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.flag, err, tc.want)
		}
	}
}
