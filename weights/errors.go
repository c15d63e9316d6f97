package weights

import (
	"errors"

	"github.com/wspec/wspec/weights/tokenizer"
)

// Sentinel errors. Every error this package returns for bad input wraps one of
// these (test with errors.Is), together with a message that names the file,
// tensor or field at fault.
var (
	// ErrMalformed: a safetensors file or index that breaks the format
	// (bad header length, bad JSON, offsets outside the data, overlaps, ...).
	ErrMalformed = errors.New("weights: malformed safetensors")
	// ErrDType: a dtype this package does not know, or cannot convert.
	ErrDType = errors.New("weights: unsupported dtype")
	// ErrMissingTensor: a tensor name that the checkpoint does not hold.
	ErrMissingTensor = errors.New("weights: missing tensor")
	// ErrUnusedTensor: checkpoint tensors that the architecture does not read
	// (config.json declares fewer layers, or no biases, where the file holds
	// them): loading would silently drop them.
	ErrUnusedTensor = errors.New("weights: unused tensor")
	// ErrShape: a tensor whose shape (or byte size) is not the expected one.
	ErrShape = errors.New("weights: wrong tensor shape")
	// ErrBadConfig: a config.json (or Config) with missing or invalid fields.
	ErrBadConfig = errors.New("weights: bad config")
	// ErrUnknownArch: a config.json model_type this package cannot load.
	ErrUnknownArch = errors.New("weights: unknown model architecture")
	// ErrUnsupported: a feature of a known format that is not implemented
	// (a rope_scaling type other than llama3, a Unigram tokenizer, ...).
	ErrUnsupported = errors.New("weights: unsupported feature")
	// ErrFolderExists: an output folder that already holds files (a model or
	// anything else), which a writer replaces only when told to.
	ErrFolderExists = errors.New("weights: output folder is not empty")
	// ErrBadTokenizer: a tokenizer.json, tokenizer_config.json or GGUF tokenizer that is
	// malformed (package tokenizer's ErrBad). A tokenizer feature that is not implemented
	// wraps both ErrUnsupported and tokenizer.ErrUnsupported.
	ErrBadTokenizer = tokenizer.ErrBad
)
