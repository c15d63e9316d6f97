package setup

import (
	"errors"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/webgpu"
)

// The packages and tarball addresses as `npm view <pkg>@<ver> dist.tarball` reported them.
func TestDawnPackagePerPlatform(t *testing.T) {
	want := map[string]struct{ pkg, url, file string }{
		"linux/amd64":   {"bun-webgpu-linux-x64@0.1.7", "https://registry.npmjs.org/bun-webgpu-linux-x64/-/bun-webgpu-linux-x64-0.1.7.tgz", "package/libwebgpu_wrapper.so"},
		"windows/amd64": {"bun-webgpu-win32-x64@0.1.5", "https://registry.npmjs.org/bun-webgpu-win32-x64/-/bun-webgpu-win32-x64-0.1.5.tgz", "package/webgpu_wrapper.dll"},
		"darwin/arm64":  {"bun-webgpu-darwin-arm64@0.1.5", "https://registry.npmjs.org/bun-webgpu-darwin-arm64/-/bun-webgpu-darwin-arm64-0.1.5.tgz", "package/libwebgpu_wrapper.dylib"},
		"darwin/amd64":  {"bun-webgpu-darwin-x64@0.1.5", "https://registry.npmjs.org/bun-webgpu-darwin-x64/-/bun-webgpu-darwin-x64-0.1.5.tgz", "package/libwebgpu_wrapper.dylib"},
	}
	if got := Platforms(); len(got) != len(want) {
		t.Fatalf("Platforms() = %v, want the %d of the table", got, len(want))
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]bool{}
	for plat, w := range want {
		goos, goarch, _ := strings.Cut(plat, "/")
		p, err := Dawn(goos, goarch)
		if err != nil {
			t.Fatalf("%s: %v", plat, err)
		}
		if p.String() != w.pkg || p.URL(DefaultRegistry) != w.url || p.File != w.file {
			t.Errorf("%s: got %s %s %s, want %s %s %s", plat, p, p.URL(DefaultRegistry), p.File, w.pkg, w.url, w.file)
		}
		// The installed name must be the one the loader looks for on that OS.
		if got := path.Base(p.File); got != webgpu.LibraryFile(goos) {
			t.Errorf("%s: installs %s but the loader looks for %s", plat, got, webgpu.LibraryFile(goos))
		}
		if !hex64.MatchString(p.SHA256) || !hex64.MatchString(p.FileSHA256) || seen[p.SHA256] || seen[p.FileSHA256] {
			t.Errorf("%s: checksums %q %q are not distinct sha256 sums", plat, p.SHA256, p.FileSHA256)
		}
		seen[p.SHA256], seen[p.FileSHA256] = true, true
	}
}

func TestUnsupportedPlatform(t *testing.T) {
	for _, plat := range [][2]string{{"linux", "arm64"}, {"windows", "arm64"}, {"freebsd", "amd64"}, {"", ""}} {
		_, err := Dawn(plat[0], plat[1])
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), plat[0]+"/"+plat[1]) || !strings.Contains(err.Error(), "windows/amd64") {
			t.Errorf("%v: want ErrUnsupported naming it and the supported ones, got %v", plat, err)
		}
		if _, err := NewPlan(plat[0], plat[1], true); !errors.Is(err, ErrUnsupported) {
			t.Errorf("NewPlan %v: want ErrUnsupported, got %v", plat, err)
		}
	}
}

func TestURLHonoursRegistry(t *testing.T) {
	p := Package{Name: "x", Version: "1.2.3"}
	if got := p.URL("http://127.0.0.1:9/npm/"); got != "http://127.0.0.1:9/npm/x/-/x-1.2.3.tgz" {
		t.Errorf("URL = %s", got)
	}
}

func TestDescribeNamesWhatWouldBeFetched(t *testing.T) {
	for _, plat := range Platforms() {
		goos, goarch, _ := strings.Cut(plat, "/")
		p, err := NewPlan(goos, goarch, true)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		p.Describe(&b, "state", "")
		out := b.String()
		for _, s := range []string{plat, p.Dawn.String(), p.Dawn.URL(DefaultRegistry), p.Dawn.SHA256, p.Dawn.File,
			p.Dawn.FileSHA256, filepath.Join("state", "lib", webgpu.LibraryFile(goos)),
			Stories15M.URL(DefaultRegistry), Stories15M.SHA256, Stories15M.ModelSHA256, Stories15M.TokenizerSHA256} {
			if !strings.Contains(out, s) {
				t.Errorf("%s: dry run does not show %q:\n%s", plat, s, out)
			}
		}
	}
	p, _ := NewPlan("windows", "amd64", false)
	var b strings.Builder
	p.Describe(&b, "state", "http://mirror.example/npm")
	if out := b.String(); !strings.Contains(out, "default model: skipped") || strings.Contains(out, Stories15M.Name+"\n") ||
		!strings.Contains(out, "http://mirror.example/npm/bun-webgpu-win32-x64/-/") {
		t.Errorf("without the model, from a mirror:\n%s", out)
	}
}
