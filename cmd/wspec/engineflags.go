package main

import (
	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/engine"
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
	speculate *specFlags
}

func addEngineFlags(fs *pflag.FlagSet) *engineFlags {
	return &engineFlags{fs: fs,
		model:   fs.String("model", "", "model folder (Hugging Face layout); default: models/stories15M in $WSPEC_HOME, the user cache folder or ./.wspec"),
		adapter: fs.String("adapter", "", "adapter: index, backend (vulkan, metal, d3d12) or type (cpu, discrete-gpu); see wspec devices"),
		dtype:   fs.String("dtype", "f32", "weight storage on the device: f32 or f16"),
		pages:   fs.Int("num-gpu-blocks-override", 0, "KV cache pages of 16 tokens (0: two full contexts); fewer make requests queue sooner"),
		prefix: fs.Bool("enable-prefix-caching", true,
			"keep the KV pages of prompts and outputs for later requests that start with the same tokens (chat turns, shared system prompts, n choices)"),
		noPrefix:  fs.Bool("no-enable-prefix-caching", false, "turn the prefix cache off (vLLM's spelling of --enable-prefix-caching=false)"),
		speculate: addSpecFlags(fs),
	}
}

// options are the engine options the flags give (the speculative config included).
func (f *engineFlags) options() (engine.Options, error) {
	sc, err := f.speculate.config()
	if err != nil {
		return engine.Options{}, err
	}
	return engine.Options{Adapter: *f.adapter, DType: *f.dtype, Pages: *f.pages, Speculative: sc,
		NoPrefixCaching: !*f.prefix || *f.noPrefix}, nil
}
