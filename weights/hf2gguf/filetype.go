package hf2gguf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/wspec/wspec/weights/gguf"
)

// FileType is what llama-quantize calls a file type (llama_ftype): the type most matrices take
// and the rules that give some of them more bits. Norms, biases and rope_freqs stay F32.
type FileType struct {
	Name   string
	number uint32          // general.file_type
	base   gguf.TensorType // the matrices' type unless a rule says otherwise
}

// The file types Convert writes (llama.h's LLAMA_FTYPE_*; the K-quant mixes as llama-quantize
// makes them without an importance matrix).
var (
	FileF32    = FileType{"f32", 0, gguf.F32}
	FileF16    = FileType{"f16", 1, gguf.F16}
	FileQ4_0   = FileType{"q4_0", 2, gguf.Q4_0}
	FileQ4_1   = FileType{"q4_1", 3, gguf.Q4_1}
	FileQ8_0   = FileType{"q8_0", 7, gguf.Q8_0}
	FileQ5_0   = FileType{"q5_0", 8, gguf.Q5_0}
	FileQ5_1   = FileType{"q5_1", 9, gguf.Q5_1}
	FileQ4_K_S = FileType{"q4_k_s", 14, gguf.Q4_K}
	FileQ4_K_M = FileType{"q4_k_m", 15, gguf.Q4_K}
	FileQ5_K_S = FileType{"q5_k_s", 16, gguf.Q5_K}
	FileQ5_K_M = FileType{"q5_k_m", 17, gguf.Q5_K}
	FileQ6_K   = FileType{"q6_k", 18, gguf.Q6_K}
)

var fileTypes = []FileType{FileF32, FileF16, FileQ8_0, FileQ4_0, FileQ4_1, FileQ5_0, FileQ5_1,
	FileQ4_K_S, FileQ4_K_M, FileQ5_K_S, FileQ5_K_M, FileQ6_K}

// Number is the file type's llama_ftype (general.file_type).
func (f FileType) Number() uint32 { return f.number }

// FileTypeNames lists the names ParseFileType takes.
func FileTypeNames() []string {
	var out []string
	for _, f := range fileTypes {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// ParseFileType is the file type named s (case-insensitive: q4_k_m, Q8_0, f16, ...).
func ParseFileType(s string) (FileType, error) {
	for _, f := range fileTypes {
		if strings.EqualFold(s, f.Name) {
			return f, nil
		}
	}
	return FileType{}, fmt.Errorf("file type %q: want one of %s", s, strings.Join(FileTypeNames(), ", "))
}

// tensorRole is what a matrix is to llama-quantize's rules.
type tensorRole int

const (
	roleOther  tensorRole = iota
	roleOutput            // output.weight, or token_embd.weight when the embeddings are tied
	roleEmbed             // token_embd.weight of an untied model
	roleAttnV
	roleFFNDown
)

// matrixType is the type of a matrix of ncols columns (GGUF's ne[0]) with role r in layer
// layer of n, as llama-quantize's llama_tensor_get_type chooses it for a dense model without an
// importance matrix, then demoted when its rows are not whole blocks of that type.
func (f FileType) matrixType(r tensorRole, layer, n, ncols int) gguf.TensorType {
	t := f.base
	if t == gguf.F32 || t == gguf.F16 {
		return t
	}
	moreBits := layer < n/8 || layer >= 7*n/8 || (layer-n/8)%3 == 2 // use_more_bits
	switch r {
	case roleOutput:
		switch {
		case ncols%t.BlockSize() != 0 || t == gguf.Q8_0:
			t = gguf.Q8_0
		default:
			t = gguf.Q6_K
		}
	case roleAttnV:
		switch {
		case (f == FileQ4_K_M || f == FileQ5_K_M) && moreBits:
			t = gguf.Q6_K
		case f == FileQ4_K_S && layer < 4:
			t = gguf.Q5_K
		}
	case roleFFNDown:
		switch {
		case (f == FileQ4_K_M || f == FileQ5_K_M) && moreBits:
			t = gguf.Q6_K
		case f == FileQ4_K_S && layer < n/8:
			t = gguf.Q5_K
		}
	}
	if ncols%t.BlockSize() != 0 { // tensor_type_fallback
		switch t {
		case gguf.Q4_K:
			t = gguf.Q5_0
		case gguf.Q5_K:
			t = gguf.Q5_1
		case gguf.Q6_K:
			t = gguf.Q8_0
		}
		if ncols%t.BlockSize() != 0 {
			t = gguf.F16
		}
	}
	return t
}
