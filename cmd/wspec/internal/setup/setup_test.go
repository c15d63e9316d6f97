package setup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// tgz builds an npm-style tarball from name -> content.
func tgz(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// fakeRegistry serves tarballs by URL path and counts the requests.
type fakeRegistry struct {
	*httptest.Server
	files map[string][]byte
	hits  atomic.Int32
}

func newRegistry(t *testing.T) *fakeRegistry {
	r := &fakeRegistry{files: map[string][]byte{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		b, ok := r.files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(r.Close)
	return r
}

// publish serves a tarball of files as p and returns p pinned to it.
func (r *fakeRegistry) publish(t *testing.T, p Package, files map[string][]byte) Package {
	b := tgz(t, files)
	r.files[strings.TrimPrefix(p.URL(r.URL), r.URL)] = b
	p.SHA256 = sum(b)
	return p
}

// testPlan publishes a small Dawn package and a small model package.
func testPlan(t *testing.T, reg *fakeRegistry) (Plan, []byte) {
	lib := []byte("a Dawn build, for the test")
	dawn := reg.publish(t, Package{Name: "dawn-test", Version: "1.0.0", File: "package/libwebgpu_wrapper.so", FileSHA256: sum(lib)},
		map[string][]byte{"package/README.md": []byte("readme"), "package/libwebgpu_wrapper.so": lib})
	data := bytes.Repeat([]byte("model weights and then a tokenizer "), 40)
	m := Model{Name: "tiny", ModelSize: 1000, TokenizerSize: int64(len(data)) - 1000,
		ModelSHA256: sum(data[:1000]), TokenizerSHA256: sum(data[1000:])}
	m.Package = reg.publish(t, Package{Name: "model-test", Version: "0.1.0", File: "package/dist/llama2.data"},
		map[string][]byte{"package/dist/llama2.data": data, "package/dist/other.js": []byte("x")})
	return Plan{GOOS: "linux", GOARCH: "amd64", Dawn: dawn, Model: &m}, data
}

// fakeConvert writes the files a conversion leaves and counts its calls.
func fakeConvert(calls *int) func(string, string, string) error {
	return func(modelBin, tokBin, out string) error {
		*calls++
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"model.safetensors", "config.json", "tokenizer.json"} {
			if err := os.WriteFile(filepath.Join(out, f), []byte(modelBin+" "+tokBin), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestRunInstallsThenSkips(t *testing.T) {
	reg := newRegistry(t)
	plan, data := testPlan(t, reg)
	dir := t.TempDir()
	calls := 0
	opts := Options{Dir: dir, Registry: reg.URL, Convert: fakeConvert(&calls)}
	if err := Run(context.Background(), plan, opts); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "lib", "libwebgpu_wrapper.so")); string(got) != "a Dawn build, for the test" {
		t.Fatalf("library holds %q", got)
	}
	raw := plan.Model.RawDir(dir)
	mb, _ := os.ReadFile(filepath.Join(raw, "model.bin"))
	tb, _ := os.ReadFile(filepath.Join(raw, "tokenizer.bin"))
	if !bytes.Equal(mb, data[:1000]) || !bytes.Equal(tb, data[1000:]) {
		t.Fatalf("cut: model.bin %d bytes, tokenizer.bin %d bytes, want 1000 and %d", len(mb), len(tb), len(data)-1000)
	}
	if calls != 1 || !converted(plan.Model.Dir(dir), filepath.Join(raw, "model.bin")) {
		t.Fatalf("converter ran %d times, folder complete: %v", calls, converted(plan.Model.Dir(dir), filepath.Join(raw, "model.bin")))
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Errorf("tmp/ keeps %d entries after a successful run", len(left))
	}
	if n := reg.hits.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 tarballs", n)
	}

	// Everything is there: nothing is fetched or converted again.
	if err := Run(context.Background(), plan, opts); err != nil {
		t.Fatal(err)
	}
	if n := reg.hits.Load(); n != 2 || calls != 1 {
		t.Fatalf("second run: %d requests, %d conversions; want none new", n, calls)
	}

	// A model.bin newer than the conversion is converted again (without a download); a
	// library that is not the pinned one is replaced.
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(raw, "model.bin"), future, future)
	os.WriteFile(filepath.Join(dir, "lib", "libwebgpu_wrapper.so"), []byte("another build"), 0o644)
	if err := Run(context.Background(), plan, opts); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "lib", "libwebgpu_wrapper.so")); string(got) != "a Dawn build, for the test" || reg.hits.Load() != 3 || calls != 2 {
		t.Fatalf("third run: library %q, %d requests, %d conversions", got, reg.hits.Load(), calls)
	}
}

func TestRunWithoutModel(t *testing.T) {
	reg := newRegistry(t)
	plan, _ := testPlan(t, reg)
	plan.Model = nil
	dir := t.TempDir()
	if err := Run(context.Background(), plan, Options{Dir: dir, Registry: reg.URL}); err != nil {
		t.Fatal(err)
	}
	if n := reg.hits.Load(); n != 1 {
		t.Fatalf("%d requests, want only Dawn's", n)
	}
	if _, err := os.Stat(Stories15M.RawDir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("model folder made without a model: %v", err)
	}
}

// noPartial fails when dir holds any .part file or the named file.
func noPartial(t *testing.T, dir, file string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".part") || filepath.Base(p) == file) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

func TestChecksumMismatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*Plan)
		what  string
	}{
		{"tarball", func(p *Plan) { p.Dawn.SHA256 = strings.Repeat("0", 64) }, "dawn-test-1.0.0.tgz"},
		{"library", func(p *Plan) { p.Dawn.FileSHA256 = strings.Repeat("1", 64) }, "libwebgpu_wrapper.so"},
		{"model.bin", func(p *Plan) { p.Model.ModelSHA256 = strings.Repeat("2", 64) }, "model.bin"},
		{"tokenizer.bin", func(p *Plan) { p.Model.TokenizerSHA256 = strings.Repeat("3", 64) }, "tokenizer.bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t)
			plan, _ := testPlan(t, reg)
			tc.spoil(&plan)
			dir := t.TempDir()
			calls := 0
			err := Run(context.Background(), plan, Options{Dir: dir, Registry: reg.URL, Convert: fakeConvert(&calls)})
			if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), "pinned") {
				t.Fatalf("want ErrChecksum naming %s, got %v", tc.what, err)
			}
			noPartial(t, dir, tc.what)
			if calls != 0 {
				t.Errorf("converted after a checksum mismatch")
			}
		})
	}
}

func TestDownloadFailures(t *testing.T) {
	reg := newRegistry(t)
	plan, _ := testPlan(t, reg)

	missing := plan
	missing.Dawn.Version = "9.9.9" // not published: 404
	err := Run(context.Background(), missing, Options{Dir: t.TempDir(), Registry: reg.URL})
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "dawn-test-9.9.9.tgz") {
		t.Errorf("unpublished version: got %v", err)
	}

	noFile := plan
	noFile.Dawn.File = "package/webgpu_wrapper.dll"
	if err := Run(context.Background(), noFile, Options{Dir: t.TempDir(), Registry: reg.URL}); err == nil || !strings.Contains(err.Error(), "holds no package/webgpu_wrapper.dll") {
		t.Errorf("tarball without the library: got %v", err)
	}

	wrongSize := plan
	m := *plan.Model
	m.TokenizerSize++
	wrongSize.Model = &m
	if err := Run(context.Background(), wrongSize, Options{Dir: t.TempDir(), Registry: reg.URL}); err == nil || !strings.Contains(err.Error(), "bytes, want") {
		t.Errorf("data file of the wrong size: got %v", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	if err := Run(context.Background(), plan, Options{Dir: t.TempDir(), Registry: closed.URL}); err == nil || !strings.Contains(err.Error(), "check the network") {
		t.Errorf("unreachable registry: got %v", err)
	}

	if err := Run(context.Background(), plan, Options{}); err == nil {
		t.Errorf("no folder: want an error")
	}
}

func TestStalledDownloadEnds(t *testing.T) {
	old := stallTimeout
	stallTimeout = 200 * time.Millisecond
	defer func() { stallTimeout = old }()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
	defer srv.Close()
	plan, _ := NewPlan("linux", "amd64", false)
	dir := t.TempDir()
	start := time.Now()
	err := Run(context.Background(), plan, Options{Dir: dir, Registry: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "no data for") || time.Since(start) > 2*time.Minute { // a hang guard
		t.Fatalf("stalled download: got %v after %v", err, time.Since(start))
	}
	noPartial(t, dir, "libwebgpu_wrapper.so")
}
