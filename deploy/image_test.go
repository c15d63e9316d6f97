//go:build image

package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImageServes builds the image with deploy/image/build.sh (debootstrap, Debian's Mesa, this
// repository's wspec and Dawn, packed by umoci), unpacks the archive it wrote with umoci and runs
// the unpacked root file system the way a container runtime would: the process, user, working
// folder and environment of the image's own configuration, in a mount and PID namespace of its
// own, chrooted, with the default model mounted read-only where the image's WSPEC_HOME looks.
// It then asks for a completion on loopback, checks the API key the image was given at run time
// is enforced and never printed, and stops the server with SIGTERM as Kubernetes would.
//
// Needs root, debootstrap, umoci and the repository's .wspec (./setup.sh): CI installs them.
// DEB_CACHE keeps the downloaded packages between runs.
func TestImageServes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the image test needs root (debootstrap, chroot, mounts)")
	}
	repo := repoRoot(t)
	model := filepath.Join(repo, ".wspec", "models", "stories15M")
	if _, err := os.Stat(filepath.Join(model, "config.json")); err != nil {
		t.Fatalf("the default model is needed (./setup.sh): %v", err)
	}
	work := t.TempDir()
	archive := filepath.Join(work, "wspec.tar")
	build := exec.Command(filepath.Join(repo, "deploy", "image", "build.sh"), archive)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build.sh: %v", err)
	}

	// unpack the archive as a runtime would: the OCI layout, then umoci's runtime bundle
	layout := filepath.Join(work, "layout")
	run(t, "mkdir", "-p", layout)
	run(t, "tar", "-C", layout, "-xf", archive)
	bundle := filepath.Join(work, "bundle")
	run(t, "umoci", "unpack", "--image", layout+":wspec", bundle)
	spec := readRuntimeSpec(t, filepath.Join(bundle, "config.json"))
	if spec.Process.User.UID == 0 {
		t.Fatalf("the image runs as root: %+v", spec.Process.User)
	}
	rootfs := filepath.Join(bundle, "rootfs")
	home := envValue(spec.Process.Env, "WSPEC_HOME")
	if home == "" {
		t.Fatalf("the image sets no WSPEC_HOME: %q", spec.Process.Env)
	}
	mountAt := filepath.Join(rootfs, home, "models", "stories15M")
	if err := os.MkdirAll(mountAt, 0o755); err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	const key = "sk-image-test-7f3a9c"
	args := append(append([]string{}, spec.Process.Args...), "--port", strconv.Itoa(port))
	env := append(append([]string{}, spec.Process.Env...), "WSPEC_API_KEY="+key)
	// Inside new mount and PID namespaces (gone with the server): the model read-only, /proc,
	// a /tmp, the few device files a process reads; then chroot as the image's user.
	script := `set -e
R=$1; M=$2; AT=$3; U=$4; CWD=$5; shift 5
mount --bind "$M" "$AT" && mount -o remount,bind,ro "$AT"
mount -t proc proc "$R/proc"
mount -t tmpfs tmpfs "$R/tmp"
for d in null zero urandom random; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
exec chroot --userspec="$U" "$R" env -i "$@"`
	cmdline := []string{"--mount", "--pid", "--fork", "--kill-child", "sh", "-c", script, "-",
		rootfs, model, mountAt, fmt.Sprintf("%d:%d", spec.Process.User.UID, spec.Process.User.GID), spec.Process.Cwd}
	cmdline = append(cmdline, env...)
	cmdline = append(cmdline, "sh", "-c", `cd "$0" && exec "$@"`, spec.Process.Cwd)
	cmdline = append(cmdline, args...)
	srv := exec.Command("unshare", cmdline...)
	var logs bytes.Buffer
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	stopped := false // set once exited has been received
	defer func() {
		if !stopped {
			_ = srv.Process.Kill() // --kill-child takes the server with it
			<-exited
		}
	}()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, exited, &stopped, &logs)
	pid := processOf(t, filepath.Join(rootfs, "usr", "local", "bin", "wspec"))
	if uid := processUID(t, pid); uid != spec.Process.User.UID {
		t.Errorf("the server runs as uid %d, the image says %d", uid, spec.Process.User.UID)
	}

	body := `{"model":"stories15M","prompt":"Once upon a time","max_tokens":12,"temperature":0}`
	if code, _ := post(t, base+"/v1/completions", "", body); code != http.StatusUnauthorized {
		t.Errorf("a request without the API key: status %d, want 401", code)
	}
	code, out := post(t, base+"/v1/completions", key, body)
	if code != http.StatusOK {
		t.Fatalf("completion: status %d: %s\n%s", code, out, logs.String())
	}
	var resp struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("completion: %v: %s", err, out)
	}
	// stories15M's greedy continuation, as on the host (spec/engine's tests)
	if got, want := resp.Choices[0].Text, ", there was a little girl named Lily. She loved"; got != want {
		t.Errorf("completion text %q, want %q", got, want)
	}

	// SIGTERM, as the kubelet sends it: the server drains and exits 0
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not exit within 60 s of SIGTERM\n%s", logs.String())
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the server printed its API key:\n%s", logs.String())
	}
	t.Logf("the image's server:\n%s", logs.String())
}

// runtimeSpec is the part of an OCI runtime configuration (umoci unpack's config.json) that
// says how to start the image's process.
type runtimeSpec struct {
	Process struct {
		User struct {
			UID uint32 `json:"uid"`
			GID uint32 `json:"gid"`
		} `json:"user"`
		Args []string `json:"args"`
		Env  []string `json:"env"`
		Cwd  string   `json:"cwd"`
	} `json:"process"`
}

func readRuntimeSpec(t *testing.T, path string) runtimeSpec {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s runtimeSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(s.Process.Args) == 0 || s.Process.Cwd == "" {
		t.Fatalf("%s: no process to run: %+v", path, s.Process)
	}
	return s
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	c := exec.Command(name, args...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitHealthy(t *testing.T, base string, exited <-chan error, stopped *bool, logs *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			*stopped = true
			t.Fatalf("the server exited before serving: %v\n%s", err, logs.String())
		default:
		}
		if r, err := http.Get(base + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("no healthy server at %s within 3 minutes\n%s", base, logs.String())
}

func post(t *testing.T, url, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	r, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	out, _ := io.ReadAll(r.Body)
	return r.StatusCode, out
}

// processOf finds the running process whose executable is exe (a path on this machine).
func processOf(t *testing.T, exe string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			return pid
		}
	}
	t.Fatalf("no process runs %s", exe)
	return 0
}

func processUID(t *testing.T, pid int) uint32 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			uid, err := strconv.ParseUint(f[0], 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			return uint32(uid)
		}
	}
	t.Fatalf("/proc/%d/status has no Uid", pid)
	return 0
}
