package weights

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MedusaFileName is the weights file of a FasterDecoding Medusa checkpoint (TGI reads this
// name); LoadMedusa falls back to the folder's model.safetensors (or shards).
const MedusaFileName = "medusa_lm_head.safetensors"

// Medusa layouts LoadMedusa recognises.
const (
	MedusaV1   = "medusa-v1" // {k}.{j}.linear.weight|bias and an output layer {k}.{R}.weight
	MedusaV2   = "medusa-v2" // the same blocks, no output layer: the target's LM head is used
	MedusaVLLM = "vllm"      // blocks.{k}.layers.{j}.weight|bias and lm_heads.{k}.weight
)

// MedusaBlock is one residual block of a Medusa head: z = z + SiLU(W z + B).
type MedusaBlock struct {
	W []float32 // [Dim, Dim]
	B []float32 // [Dim] (zeros when the checkpoint has no bias)
}

// Medusa is a Medusa checkpoint in float32: K heads of R residual blocks each, and per head
// an output layer [Vocab, Dim] or none (then the target's LM head is used). Head k predicts
// the token k+2 places after the position whose (final-normed) hidden state it reads.
type Medusa struct {
	Dim    int             // H: the target's hidden size
	Vocab  int             // rows of the output layers (0 without them)
	Layers int             // R: residual blocks per head
	Blocks [][]MedusaBlock // [K][R]; blocks of one head may share slices (shared weights)
	Out    [][]float32     // [K] of [Vocab, Dim]; nil without output layers
	Layout string          // MedusaV1, MedusaV2 or MedusaVLLM
}

// Heads is K, the number of heads.
func (m *Medusa) Heads() int { return len(m.Blocks) }

// medusaConfig is what LoadMedusa reads of config.json: FasterDecoding's keys and vLLM's.
type medusaConfig struct {
	MedusaNumHeads  *int `json:"medusa_num_heads"`
	MedusaNumLayers *int `json:"medusa_num_layers"`
	NumHeads        *int `json:"num_heads"`
	NumHiddenLayers *int `json:"num_hidden_layers"`
}

// tensorSource is a SafeTensors file or a Checkpoint.
type tensorSource interface {
	Names() []string
	Tensor(name string) (Tensor, error)
	Close() error
}

// LoadMedusa reads a Medusa checkpoint folder: config.json (optional; medusa_num_layers is
// used only when the tensors do not tell R) and medusa_lm_head.safetensors (or .zst), else
// model.safetensors. It accepts FasterDecoding's layout (v1 with output layers, v2 without)
// and vLLM's, with or without a medusa_head(s). prefix, in F32, F16 or BF16. The number of
// heads is counted from the tensor names (published configs may be wrong). A missing tensor
// or a wrong shape is an error wrapping ErrMissingTensor or ErrShape.
//
// target (when not nil) bounds the bytes the files may declare, from its hidden size and
// vocabulary and the heads and layers config.json gives (16 and 4 without them), before any
// compressed file is expanded.
func LoadMedusa(dir string, target *Config) (*Medusa, error) {
	cfgR, heads := 0, 16
	switch b, err := os.ReadFile(filepath.Join(dir, ConfigFileName)); {
	case err == nil:
		var c medusaConfig
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadConfig, filepath.Join(dir, ConfigFileName), err)
		}
		for _, v := range []*int{c.MedusaNumLayers, c.NumHiddenLayers} {
			if v != nil {
				if *v < 1 || *v > maxMedusaIndex {
					return nil, fmt.Errorf("%w: %s: %d Medusa layers", ErrBadConfig, dir, *v)
				}
				cfgR = *v
				break
			}
		}
		for _, v := range []*int{c.MedusaNumHeads, c.NumHeads} {
			if v != nil && *v >= 1 && *v <= maxMedusaIndex {
				heads = *v
				break
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	var b *dataBudget
	if target != nil {
		h, v, r := int64(target.Dim), int64(target.Vocab), int64(max(cfgR, 4))
		b = &dataBudget{left: 4*int64(heads)*(r*(h*h+h)+v*h) + 1<<20, why: "the target's hidden size and vocabulary"}
	}
	var src tensorSource
	if p := filepath.Join(dir, MedusaFileName); fileExists(p) || fileExists(p+".zst") {
		st, err := openShard(p, b) // or p.zst
		if err != nil {
			return nil, err
		}
		src = st
	} else {
		ck, err := openCheckpointWithin(dir, b)
		if err != nil {
			return nil, fmt.Errorf("weights: %s has no %s: %w", dir, MedusaFileName, err)
		}
		src = ck
	}
	defer src.Close()
	m, err := readMedusa(src, cfgR)
	if err != nil {
		return nil, fmt.Errorf("medusa checkpoint %s: %w", dir, err)
	}
	return m, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

var (
	fdBlockRE   = regexp.MustCompile(`^(\d+)\.(\d+)\.linear\.(weight|bias)$`)
	fdOutRE     = regexp.MustCompile(`^(\d+)\.(\d+)\.weight$`)
	vllmBlockRE = regexp.MustCompile(`^blocks\.(\d+)\.layers\.(\d+)\.(weight|bias)$`)
	vllmOutRE   = regexp.MustCompile(`^lm_heads\.(\d+)\.weight$`)
)

// medusaNames sorts a checkpoint's Medusa tensor names by role.
type medusaNames struct {
	block map[[2]int]string // (k, j) -> weight name
	bias  map[[2]int]string // (k, j) -> bias name
	out   map[int]string    // k -> output layer name
	outJ  map[int]int       // k -> j of a FasterDecoding output layer ({k}.{j}.weight)
	all   []string          // every name above
	vllm  bool
}

// maxMedusaIndex bounds the heads and the blocks per head (and so every index in a name).
const maxMedusaIndex = 64

// atoi reads an index of a tensor name; one past the int range reads as too large.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return math.MaxInt32
	}
	return n
}

// scanMedusaNames classifies names (after dropping a medusa_head. or medusa_heads. prefix);
// names of other tensors (a base model saved alongside) are ignored.
func scanMedusaNames(names []string) (*medusaNames, error) {
	n := &medusaNames{block: map[[2]int]string{}, bias: map[[2]int]string{}, out: map[int]string{}, outJ: map[int]int{}}
	fd := false
	for _, full := range names {
		s := strings.TrimPrefix(strings.TrimPrefix(full, "medusa_heads."), "medusa_head.")
		if g := fdBlockRE.FindStringSubmatch(s); g != nil {
			fd = true
			kj := [2]int{atoi(g[1]), atoi(g[2])}
			if g[3] == "weight" {
				n.block[kj] = full
			} else {
				n.bias[kj] = full
			}
		} else if g := fdOutRE.FindStringSubmatch(s); g != nil {
			fd = true
			n.out[atoi(g[1])], n.outJ[atoi(g[1])] = full, atoi(g[2])
		} else if g := vllmBlockRE.FindStringSubmatch(s); g != nil {
			n.vllm = true
			kj := [2]int{atoi(g[1]), atoi(g[2])}
			if g[3] == "weight" {
				n.block[kj] = full
			} else {
				n.bias[kj] = full
			}
		} else if g := vllmOutRE.FindStringSubmatch(s); g != nil {
			n.vllm = true
			n.out[atoi(g[1])] = full
		} else {
			continue
		}
		n.all = append(n.all, full)
	}
	switch {
	case fd && n.vllm:
		return nil, fmt.Errorf("%w: tensors of both the FasterDecoding and the vLLM Medusa layouts", ErrMalformed)
	case len(n.block) == 0:
		return nil, fmt.Errorf("%w: no Medusa head tensors ({k}.{j}.linear.weight or blocks.{k}.layers.{j}.weight)", ErrMissingTensor)
	}
	return n, nil
}

// recordingSource is a tensorSource that remembers which tensors were read.
type recordingSource struct {
	tensorSource
	read map[string]bool
}

func (r recordingSource) Tensor(name string) (Tensor, error) {
	r.read[name] = true
	return r.tensorSource.Tensor(name)
}

// readMedusa reads the heads from src; cfgR is config.json's layer count (0: none). A
// Medusa tensor that no head reads (a bias or output layer of a head without blocks, a
// bias of a block without a weight) is ErrUnusedTensor.
func readMedusa(src tensorSource, cfgR int) (*Medusa, error) {
	n, err := scanMedusaNames(src.Names())
	if err != nil {
		return nil, err
	}
	rec := recordingSource{src, map[string]bool{}}
	m, err := readMedusaHeads(rec, n, cfgR)
	if err != nil {
		return nil, err
	}
	var unused []string
	for _, name := range n.all {
		if !rec.read[name] {
			unused = append(unused, name)
		}
	}
	if len(unused) > 0 {
		sort.Strings(unused)
		return nil, fmt.Errorf("%w: %s that %d heads of %d blocks do not read: %s",
			ErrUnusedTensor, countTensors(len(unused)), m.Heads(), m.Layers, listNames(unused))
	}
	return m, nil
}

// readMedusaHeads reads the heads of the tensors n names.
func readMedusaHeads(src tensorSource, n *medusaNames, cfgR int) (*Medusa, error) {
	K, Rb := 0, 0 // heads, and blocks per head as the names tell
	for kj := range n.block {
		K, Rb = max(K, kj[0]+1), max(Rb, kj[1]+1)
	}
	if K > maxMedusaIndex || Rb > maxMedusaIndex {
		return nil, fmt.Errorf("%w: Medusa head or block index too large (%d heads, %d blocks)", ErrMalformed, K, Rb)
	}
	m := &Medusa{Layout: MedusaVLLM}
	R := Rb
	if !n.vllm {
		m.Layout = MedusaV2
		if len(n.out) > 0 {
			m.Layout = MedusaV1
			R = -1 // v1: the output layer sits after the R blocks
			for k, j := range n.outJ {
				if R < 0 {
					R = j
				}
				if j != R || k >= K {
					return nil, fmt.Errorf("%w: Medusa output layer %s does not fit %d heads of %d blocks", ErrMalformed, n.out[k], K, R)
				}
			}
		} else if cfgR > 0 {
			R = cfgR
		}
	}
	if R < Rb {
		return nil, fmt.Errorf("%w: block %d present but heads have %d blocks", ErrMalformed, Rb-1, R)
	}
	if R > maxMedusaIndex {
		return nil, fmt.Errorf("%w: Medusa output layer index too large (%d blocks per head)", ErrMalformed, R)
	}
	m.Layers = R
	// A converter that drops repeated tensors leaves only block 0 of each head when all blocks
	// share weights (FasterDecoding's [ResBlock] * R): then block 0 serves every block.
	shared := Rb == 1 && R > 1
	name0, ok := n.block[[2]int{0, 0}]
	if !ok {
		return nil, fmt.Errorf("%w: no weight of block 0 of head 0", ErrMissingTensor)
	}
	w0, err := readF32(src, name0, -1, -1)
	if err != nil {
		return nil, err
	}
	if len(w0.shape) != 2 || w0.shape[0] != w0.shape[1] || w0.shape[0] == 0 {
		return nil, fmt.Errorf("%w: %s is %v, want a square [H, H]", ErrShape, name0, w0.shape)
	}
	H := w0.shape[0]
	m.Dim = H
	for k := range K {
		var blocks []MedusaBlock
		for j := range R {
			if shared && j > 0 {
				blocks = append(blocks, blocks[0])
				continue
			}
			b, err := readBlock(src, n, k, j, H)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		}
		m.Blocks = append(m.Blocks, blocks)
	}
	if len(n.out) == 0 {
		return m, nil
	}
	for k := range K {
		name, ok := n.out[k]
		if !ok {
			return nil, fmt.Errorf("%w: head %d has no output layer (others do)", ErrMissingTensor, k)
		}
		o, err := readF32(src, name, -1, H)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			m.Vocab = o.shape[0]
		}
		if o.shape[0] != m.Vocab || m.Vocab == 0 {
			return nil, fmt.Errorf("%w: %s is %v, want [%d, %d]", ErrShape, name, o.shape, m.Vocab, H)
		}
		m.Out = append(m.Out, o.v)
	}
	return m, nil
}

// readBlock reads block j of head k ([H, H] weight, [H] bias; vLLM's bias is optional).
func readBlock(src tensorSource, n *medusaNames, k, j, H int) (MedusaBlock, error) {
	wn, ok := n.block[[2]int{k, j}]
	if !ok {
		return MedusaBlock{}, fmt.Errorf("%w: no weight of block %d of head %d", ErrMissingTensor, j, k)
	}
	w, err := readF32(src, wn, H, H)
	if err != nil {
		return MedusaBlock{}, err
	}
	bn, ok := n.bias[[2]int{k, j}]
	if !ok {
		if !n.vllm {
			return MedusaBlock{}, fmt.Errorf("%w: no bias of block %d of head %d (%s)", ErrMissingTensor, j, k,
				strings.TrimSuffix(wn, "weight")+"bias")
		}
		return MedusaBlock{W: w.v, B: make([]float32, H)}, nil
	}
	b, err := readF32(src, bn, H)
	if err != nil {
		return MedusaBlock{}, err
	}
	return MedusaBlock{W: w.v, B: b.v}, nil
}

type f32Tensor struct {
	v     []float32
	shape []int
}

// readF32 reads a float tensor and checks its shape: each dim >= 0 must match (-1: any).
func readF32(src tensorSource, name string, dims ...int) (f32Tensor, error) {
	t, err := src.Tensor(name)
	if err != nil {
		return f32Tensor{}, err
	}
	bad := len(t.Shape) != len(dims)
	for i := 0; !bad && i < len(dims); i++ {
		bad = dims[i] >= 0 && t.Shape[i] != dims[i]
	}
	if bad {
		return f32Tensor{}, fmt.Errorf("%w: %s is %v, want %v (-1: any)", ErrShape, name, t.Shape, dims)
	}
	v, err := t.Float32()
	if err != nil {
		return f32Tensor{}, fmt.Errorf("tensor %s: %w", name, err)
	}
	return f32Tensor{v: v, shape: t.Shape}, nil
}
