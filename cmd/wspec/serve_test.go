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
		{[]string{"-k", "3"}, "without --speculative-mode"},
		{[]string{"--speculative-mode", "telepathy"}, "unknown method"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--host", "256.0.0.1", "--port", "0"}, "256.0.0.1"},
	} {
		err := runServe(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %q: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// `wspec serve` as users run it: SIGTERM during a streamed request stops the server from
// accepting, the request completes or is cancelled within --shutdown-timeout (its stream
// ending with [DONE] either way), and the process exits 0.
func TestServeSIGTERM(t *testing.T) {
	bin := wspecBinary(t)
	const bound = time.Second
	cmd := exec.Command(bin, "serve", "--port", "0", "--speculative-mode", "ngram", "--shutdown-timeout", bound.String())
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
	go io.Copy(io.Discard, stderr)

	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 200, "temperature": 0, "stream": true}`))
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
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("the server still answers after it exited")
	}
}
