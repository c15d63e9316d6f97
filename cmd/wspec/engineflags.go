package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/weights/hub"
)

// engineFlags are the flags `generate`, `serve` and `bench` share to load a model: which
// model, where, and how its KV cache is kept. engine.Load validates their values.
type engineFlags struct {
	fs        *pflag.FlagSet
	model     *string
	adapter   *string
	dtype     *string
	pages     *int
	prefix    *bool
	noPrefix  *bool
	maxLen    *int
	kvMem     *string
	gpuUtil   *float64
	kvDType   *string
	speculate *specFlags
	revision  *string
	download  *string
	repo      string // the Hugging Face repository --model named, once resolved
}

func addEngineFlags(fs *pflag.FlagSet) *engineFlags {
	return &engineFlags{fs: fs,
		model:   fs.String("model", "", "model: a Hugging Face folder, a GGUF file (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) or a Hugging Face repository (ORG/NAME, ORG/NAME:Q4_K_M for a repository of GGUF files), fetched into the hub cache; default: models/stories15M in $WSPEC_HOME, the user cache folder or ./.wspec"),
		adapter: fs.String("adapter", "", "adapter: index, backend (vulkan, metal, d3d12) or type (cpu, discrete-gpu); see wspec devices"),
		dtype:   fs.String("dtype", "auto", "weight storage on the device: auto (f16 for an F16/BF16 checkpoint where the adapter has shader-f16, else f32), f32 or f16 (vLLM's half, float16, bfloat16, float, float32 too)"),
		pages:   fs.Int("num-gpu-blocks-override", 0, "KV cache pages of 16 tokens (0: planned from the memory, see --kv-cache-memory); fewer make requests queue sooner"),
		prefix: fs.Bool("enable-prefix-caching", true,
			"keep the KV pages of prompts and outputs for later requests that start with the same tokens (chat turns, shared system prompts, n choices)"),
		noPrefix:  fs.Bool("no-enable-prefix-caching", false, "turn the prefix cache off (vLLM's spelling of --enable-prefix-caching=false)"),
		maxLen:    fs.Int("max-model-len", 0, "each sequence's context in tokens (0: the model's, reduced with a note when one full sequence does not fit the KV cache)"),
		kvMem:     fs.String("kv-cache-memory", "", "the KV cache's size, e.g. 2GiB or 500MB (default: planned from the adapter's memory)"),
		gpuUtil:   fs.Float64("gpu-memory-utilization", 0, "share of the adapter's memory to plan for, weights and KV cache (default 0.9; a CPU adapter's KV cache is then at most 4 GiB)"),
		kvDType:   fs.String("kv-cache-dtype", "auto", "KV cache type: auto (the weights'), f16 or f32"),
		speculate: addSpecFlags(fs),
		revision:  fs.String("revision", "", "with a model named as a Hugging Face repository: the branch, tag or commit (default main)"),
		download:  fs.String("download-dir", "", "with a model named as a Hugging Face repository: the hub cache to fetch into (default $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)"),
	}
}

// resolve makes a model named as a Hugging Face repository the folder or file it is in the
// hub cache (resolveModel).
func (f *engineFlags) resolve() error {
	path, repo, err := resolveModel(*f.model, *f.revision, *f.download)
	if err != nil {
		return err
	}
	f.repo, *f.model = repo, path
	return nil
}

// resolveModel makes a model named as a Hugging Face repository (ORG/NAME, or ORG/NAME:QUANT
// for a repository of GGUF files, as llama-server's -hf takes it) the folder or file it is in
// the hub cache, fetching what the cache lacks (HF_TOKEN, HF_ENDPOINT and HF_HUB_OFFLINE=1 as
// huggingface_hub reads them), and returns it with the repository. A path that exists is
// returned as it is, as vLLM does.
func resolveModel(m, revision, downloadDir string) (path, repo string, err error) {
	if m == "" {
		return "", "", nil
	}
	if _, err := os.Stat(m); err == nil {
		return m, "", nil
	}
	ref, ok := hub.ParseRef(m)
	if !ok {
		return m, "", nil // the loader says the path does not exist
	}
	path, err = hub.Download(context.Background(), ref, hub.Options{Revision: revision, CacheDir: downloadDir, Progress: downloadBar()})
	if err != nil {
		return "", "", fmt.Errorf("%s is no file or folder here, so it was looked up as a Hugging Face repository: %w", m, err)
	}
	return path, ref.Repo, nil
}

// options are the engine options the flags give (the speculative config included).
func (f *engineFlags) options() (engine.Options, error) {
	if err := f.resolve(); err != nil {
		return engine.Options{}, err
	}
	sc, err := f.speculate.config()
	if err != nil {
		return engine.Options{}, err
	}
	kvMem, err := parseBytes(*f.kvMem)
	if err != nil {
		return engine.Options{}, fmt.Errorf("--kv-cache-memory: %w", err)
	}
	dtype := *f.dtype
	switch dtype { // vLLM's spellings
	case "half", "float16", "bfloat16":
		dtype = "f16" // a bf16 checkpoint is kept as f16 on the device
	case "float", "float32":
		dtype = "f32"
	}
	return engine.Options{Adapter: *f.adapter, DType: dtype, Pages: *f.pages, Speculative: sc,
		NoPrefixCaching: !*f.prefix || *f.noPrefix, MaxModelLen: *f.maxLen, KVCacheMemory: kvMem,
		GPUMemoryUtilization: *f.gpuUtil, KVCacheDType: *f.kvDType}, nil
}

// parseBytes reads a size: a number of bytes, or with a unit (KB, MB, GB: powers of 1000;
// KiB, MiB, GiB: of 1024). "" is 0.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: want a size such as 2GiB, 500MB or a number of bytes", s)
	}
	if n := int64(v * mult); v > 0 && n < 1<<20 {
		return 0, fmt.Errorf("%q is %d bytes: want at least 1MiB (0 plans it from the adapter's memory)", s, n)
	}
	return int64(v * mult), nil
}
