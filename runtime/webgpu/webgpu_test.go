//go:build !js

package webgpu

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func testDevice(t testing.TB) *Device {
	t.Helper()
	in, err := NewInstance()
	if err != nil {
		t.Fatal(err)
	}
	ads, err := in.Adapters()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ads[0].RequestDevice()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Release)
	return d
}

const doubleWGSL = `
override scale: f32 = 2.0;
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < arrayLength(&src)) { dst[g.x] = src[g.x] * scale; }
}`

func TestDispatchRoundTrip(t *testing.T) {
	d := testDevice(t)
	m, err := d.CreateShaderModule("double", doubleWGSL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.CreateComputePipeline(m, "double", map[string]float64{"scale": 3})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	src, _ := d.CreateBuffer("src", n*4, UsageStorage|UsageCopyDst)
	dst, _ := d.CreateBuffer("dst", n*4, UsageStorage|UsageCopySrc)
	rd, _ := d.CreateBuffer("read", n*4, UsageMapRead|UsageCopyDst)
	in := make([]byte, n*4)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(in[i*4:], math.Float32bits(float32(i)))
	}
	src.Write(0, in)
	g, err := d.CreateBindGroup(p, []Binding{{Buffer: src}, {Buffer: dst}})
	if err != nil {
		t.Fatal(err)
	}
	e := d.NewEncoder()
	ps := e.BeginPass(nil, 0)
	ps.Dispatch(p, g, (n+63)/64, 1, 1)
	ps.End()
	e.Copy(dst, 0, rd, 0, n*4)
	if err := e.Submit(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, n*4)
	if err := rd.Read(0, out); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[i*4:])); got != float32(3*i) {
			t.Fatalf("dst[%d] = %v, want %v", i, got, 3*i)
		}
	}
}

func TestCompileErrorNamesKernelLineColumn(t *testing.T) {
	d := testDevice(t)
	_, err := d.CreateShaderModule("broken", "fn main() {\n  let x: f32 = undefined_thing;\n}\n")
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("want CompileError, got %v", err)
	}
	if !strings.Contains(err.Error(), "broken.wgsl:2:") || !errors.Is(err, ErrValidation) {
		t.Fatalf("error does not name kernel and line: %v", err)
	}
}

func TestFeaturesOfThisBuild(t *testing.T) {
	d := testDevice(t)
	info := d.Adapter.Info
	t.Logf("adapter %s features %v", info.Name(), info.Features)
	// Dawn's numbering: with webgpu-headers HEAD's numbers shader-f16 would be misread.
	if d.HasF16 {
		if _, err := d.CreateShaderModule("f16", "enable f16;\n@compute @workgroup_size(1) fn main() { let h: f16 = 1.0h; }"); err != nil {
			t.Fatalf("device claims shader-f16 but `enable f16;` fails: %v", err)
		}
	}
}

func TestMissingLibraryErrors(t *testing.T) {
	t.Setenv(LibraryEnv, filepath.Join(t.TempDir(), "nope.so"))
	_, err := FindLibrary()
	if !errors.Is(err, ErrLibraryNotFound) || !strings.Contains(err.Error(), "setup.sh") {
		t.Fatalf("want ErrLibraryNotFound naming setup.sh, got %v", err)
	}
}

// fakeLibrary compiles a shared library exporting the given symbols.
func fakeLibrary(t *testing.T, symbols ...string) string {
	t.Helper()
	dir := t.TempDir()
	var src strings.Builder
	for _, s := range symbols {
		src.WriteString("void " + s + "(void) {}\n")
	}
	c := filepath.Join(dir, "fake.c")
	so := filepath.Join(dir, "libfake.so")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-o", so, c).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return so
}

func TestUnknownGenerationRefused(t *testing.T) {
	newer := fakeLibrary(t, "wgpuGetInstanceFeatures", "wgpuCreateInstance")
	if _, err := Probe(newer); !errors.Is(err, ErrUnknownGeneration) || !strings.Contains(err.Error(), "wgpuGetInstanceFeatures") {
		t.Fatalf("newer Dawn: want ErrUnknownGeneration, got %v", err)
	}
	none := fakeLibrary(t, "somethingElse")
	if _, err := Probe(none); !errors.Is(err, ErrUnknownGeneration) {
		t.Fatalf("no wgpu symbols: want ErrUnknownGeneration, got %v", err)
	}
	path, err := FindLibrary()
	if err != nil {
		t.Fatal(err)
	}
	gen, err := Probe(path)
	if err != nil || !strings.HasPrefix(gen, "dawn-2025-06") {
		t.Fatalf("pinned build: generation %q, err %v", gen, err)
	}
}

func TestWrongLibraryPathErrors(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "junk.so")
	os.WriteFile(notELF, []byte("not a library"), 0o644)
	if _, err := Probe(notELF); !errors.Is(err, ErrLibraryLoad) {
		t.Fatalf("junk file: want ErrLibraryLoad, got %v", err)
	}
	if _, err := Probe(notELF + ".missing"); !errors.Is(err, ErrLibraryLoad) {
		t.Fatalf("missing file: want ErrLibraryLoad, got %v", err)
	}
}

// TestValidationErrorsBecomeGoErrors: submitting work that uses a destroyed buffer is a
// validation error, which comes back from Submit as an error wrapping ErrValidation, and the
// device goes on working afterwards.
func TestValidationErrorsBecomeGoErrors(t *testing.T) {
	d := testDevice(t)
	m, err := d.CreateShaderModule("double", doubleWGSL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.CreateComputePipeline(m, "double", nil)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := d.CreateBuffer("src", 64, UsageStorage|UsageCopyDst)
	dst, _ := d.CreateBuffer("dst", 64, UsageStorage|UsageCopySrc)
	g, err := d.CreateBindGroup(p, []Binding{{Buffer: src}, {Buffer: dst}})
	if err != nil {
		t.Fatal(err)
	}
	e := d.NewEncoder()
	ps := e.BeginPass(nil, 0)
	ps.Dispatch(p, g, 1, 1, 1)
	ps.End()
	src.Release()
	if err := e.Submit(); !errors.Is(err, ErrValidation) {
		t.Fatalf("submit using a destroyed buffer: want ErrValidation, got %v", err)
	}
	if _, err := d.CreateBindGroup(p, []Binding{{Buffer: dst}}); !errors.Is(err, ErrValidation) {
		t.Fatalf("bind group with a missing binding: want ErrValidation, got %v", err)
	}
	if err := d.WaitIdle(); err != nil {
		t.Fatalf("device unusable after the errors: %v", err)
	}
}
