package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wspec/wspec/spec/engine"
)

// Flags a user can get wrong are refused before any model loads.
func TestServeFlags(t *testing.T) {
	if code := run([]string{"serve", "--help"}); code != 0 {
		t.Fatalf("serve --help exited %d", code)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "70000"}, "--port 70000"},
		{[]string{"--port", "-1"}, "--port -1"},
		{[]string{"--shutdown-timeout", "-1s"}, "--shutdown-timeout"},
		{[]string{"--max-request-bytes", "0"}, "--max-request-bytes 0"},
		{[]string{"--num-gpu-blocks-override", "-4"}, "num_gpu_blocks_override -4"},
		{[]string{"--num-gpu-blocks-override", "1152921504606846976"}, "num_gpu_blocks_override 1152921504606846976"},
		{[]string{"--kv-cache-memory", "0.5"}, "at least 1MiB"},
		{[]string{"--kv-cache-memory", "NaN"}, "want a size"},
		{[]string{"--kv-cache-memory", "-2GiB"}, "want a size"},
		{[]string{"-k", "3"}, "without --speculative-mode"},
		{[]string{"--speculative-mode", "telepathy"}, "unknown method"},
		{[]string{"one", "two"}, "unexpected argument"},
		{[]string{"one", "--model", "two"}, "two models"},
		{[]string{"--shutdown-timeout", "-1"}, "--shutdown-timeout"},
		{[]string{"--tensor-parallel-size", "2"}, "one device"},
		{[]string{"-tp", "4"}, "--tensor-parallel-size 4"},
		{[]string{"--block-size", "32"}, "--block-size 32"},
		{[]string{"--tool-call-parser", "nope"}, "hermes"},
		{[]string{"--enable-auto-tool-choice"}, "needs --tool-call-parser"},
		{[]string{"--reasoning-parser", "nope"}, "qwen3"},
		{[]string{"--max-logprobs", "99"}, "--max-logprobs 99"},
		{[]string{"--max-num-seqs", "0"}, "--max-num-seqs 0"},
		{[]string{"--max-num-batched-tokens", "8", "--port", "0"}, "max_num_batched_tokens 8"},
		{[]string{"--host", "256.0.0.1", "--port", "0"}, "256.0.0.1"},
		{[]string{"--generation-config", "/nonexistent", "--port", "0"}, "--generation-config /nonexistent"},
		{[]string{"--tokenizer", "other/tok", "--port", "0"}, "the default model's"},
	} {
		err := runServe(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %q: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// `wspec serve` as users run it, with vLLM's command line (the model first, vLLM's flags):
// the harmless flags get a note, an unknown request field a warning; SIGTERM during a
// streamed request stops the server from accepting, the request completes or is cancelled
// within --shutdown-timeout (given in seconds, as vLLM takes it; its stream ending with
// [DONE] either way), and the process exits 0.
func TestServeSIGTERM(t *testing.T) {
	bin := wspecBinary(t)
	model, err := engine.DefaultModelDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", model, "--port", "0", "--speculative-mode", "ngram", "--shutdown-timeout", "1",
		"--max-num-seqs", "4", "--seed", "0", "--tensor-parallel-size", "1", "--generation-config", "auto", "--trust-remote-code",
		"--disable-log-requests", "--max-num-batched-tokens", "64")
	cmd.Env = append(os.Environ(), "WSPEC_API_KEY=") // no key from the environment
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The address is printed when the server is ready.
	lines := bufio.NewScanner(stderr)
	url := ""
	var log strings.Builder
	for url == "" && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if _, rest, ok := strings.Cut(lines.Text(), "on http://"); ok {
			url = "http://" + strings.Fields(rest)[0]
		}
	}
	if url == "" {
		t.Fatalf("the server never said where it listens:\n%s", log.String())
	}
	for _, note := range []string{"note: --tensor-parallel-size 1", "note: --trust-remote-code accepted and ignored", "note: --disable-log-requests"} {
		if !strings.Contains(log.String(), note) {
			t.Errorf("no %q in\n%s", note, log.String())
		}
	}
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stderr); rest <- string(b) }()

	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 200, "temperature": 0, "stream": true, "best_of_luck": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	for events.Scan() && !strings.HasPrefix(events.Text(), "data: ") {
	}
	t0 := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	last, end := "", ""
	for events.Scan() {
		if d, ok := strings.CutPrefix(events.Text(), "data: "); ok {
			last, end = end, d
		}
	}
	took := time.Since(t0)
	if end != "[DONE]" || !(strings.Contains(last, `"finish_reason":"length"`) || strings.Contains(last, "server_shutting_down")) {
		t.Fatalf("after SIGTERM the stream ended with %q, %q", last, end)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) || err != nil {
			t.Fatalf("wspec serve exited with %v", err)
		}
	case <-time.After(3 * time.Minute): // a hang guard
		t.Fatal("wspec serve still running after SIGTERM")
	}
	t.Logf("stream ended %v after SIGTERM (%s)", took.Round(time.Millisecond), map[bool]string{true: "completed", false: "cancelled"}[strings.Contains(last, "length")])
	if w := <-rest; !strings.Contains(w, `ignoring unknown request fields "best_of_luck"`) {
		t.Errorf("no warning of the unknown field in\n%s", w)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("the server still answers after it exited")
	}
}

// serve and web warn when they listen beyond this machine (web once did not).
func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "127.0.0.2": true,
		"0.0.0.0": false, "": false, "::": false, "192.168.1.4": false, "example.com": false} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v", host, got)
		}
	}
}
