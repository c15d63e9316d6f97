package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// captured runs f with stdout and stderr going to pipes and returns what each received.
func captured(t *testing.T, f func() error) (stdout, stderr string, err error) {
	t.Helper()
	pipe := func(into *string) (*os.File, chan struct{}) {
		r, w, perr := os.Pipe()
		if perr != nil {
			t.Fatal(perr)
		}
		done := make(chan struct{})
		go func() { b, _ := io.ReadAll(r); *into = string(b); close(done) }()
		return w, done
	}
	ow, odone := pipe(&stdout)
	ew, edone := pipe(&stderr)
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = ow, ew
	err = f()
	os.Stdout, os.Stderr = oldOut, oldErr
	ow.Close()
	ew.Close()
	<-odone
	<-edone
	return stdout, stderr, err
}

// On the default model: output cut by the end of the context says so on stderr.
func TestGenerateRuns(t *testing.T) {
	// a long, repetitive prompt: the model keeps repeating it to the end of its 256 positions
	long := strings.Repeat("The cat sat on the mat. ", 30)
	out, errOut, err := captured(t, func() error { return runGenerate([]string{"--max-tokens", "400", long}) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "reached the end of the model's context") || !strings.HasPrefix(out, long) {
		t.Errorf("a run to the end of the context did not say so:\n%s", errOut)
	}
}
