package distill

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/wspec/wspec/weights"
)

// Dataset is what the target computed along its own generations: for every position of
// every sequence, the token fed there, the residual stream after the last layer (before the
// final norm: Medusa's input, EAGLE-1's feature once normed), the residual stream entering
// each of Aux's layers (EAGLE-3's features), and the target's top-K next-token
// probabilities at that position (the teacher of every drafter). Features are stored as
// float16 bits, which halves the memory and loses nothing the training notices.
type Dataset struct {
	Target weights.TargetID // the model that generated it
	Dim    int              // the target's hidden size
	K      int              // teacher entries per position
	Aux    []int            // target layers whose input AuxF holds
	Off    []int            // [S+1] sequence s is positions Off[s]..Off[s+1]-1
	Kind   []uint8          // [S] how sequence s was generated (GenGreedy, ...)
	Prompt []int32          // [S] its prompt length (BOS included)
	Tokens []uint16         // [N] the token at each position
	Hidden []uint16         // [N, Dim] float16
	AuxF   []uint16         // [N, len(Aux), Dim] float16
	TopID  []uint16         // [N, K] teacher ids, most likely first
	TopP   []uint16         // [N, K] their probabilities, float16
}

// How a sequence was generated.
const (
	GenGreedy  uint8 = iota // greedy from the prompt
	GenSampled              // temperature 0.8, top-p 0.9 from the prompt
	GenMixed                // sampled for a few tokens, then greedy
)

// Seqs is the number of sequences; Len the number of positions.
func (d *Dataset) Seqs() int { return len(d.Off) - 1 }
func (d *Dataset) Len() int  { return len(d.Tokens) }

// SeqLen is the length of sequence s.
func (d *Dataset) SeqLen(s int) int { return d.Off[s+1] - d.Off[s] }

// f16Into converts float16 bits to float32.
func f16Into(dst []float32, src []uint16) {
	for i, h := range src {
		dst[i] = weights.F16ToF32(h)
	}
}

// HiddenRows writes the last hidden state of positions lo..hi-1 into dst [hi-lo, Dim].
func (d *Dataset) HiddenRows(dst []float32, lo, hi int) {
	f16Into(dst[:(hi-lo)*d.Dim], d.Hidden[lo*d.Dim:hi*d.Dim])
}

// AuxRows writes the aux features of positions lo..hi-1 into dst [hi-lo, len(Aux)*Dim].
func (d *Dataset) AuxRows(dst []float32, lo, hi int) {
	w := len(d.Aux) * d.Dim
	f16Into(dst[:(hi-lo)*w], d.AuxF[lo*w:hi*w])
}

// Teacher returns position i's teacher ids and probabilities, renormalised over the K kept.
func (d *Dataset) Teacher(i int, ids []int32, probs []float32) {
	var sum float32
	for j := range d.K {
		ids[j] = int32(d.TopID[i*d.K+j])
		probs[j] = weights.F16ToF32(d.TopP[i*d.K+j])
		sum += probs[j]
	}
	for j := range probs[:d.K] {
		probs[j] /= sum
	}
}

// u16Bytes views a []uint16 as bytes (little-endian machines; the writer checks).
func u16Bytes(v []uint16) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 2*len(v))
}

func i64Bytes(v []int) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// Save writes the dataset as one safetensors file (metadata in its header).
func (d *Dataset) Save(path string) error {
	if !littleEndian {
		return fmt.Errorf("distill: saving a dataset needs a little-endian machine")
	}
	aux, _ := json.Marshal(d.Aux)
	tgt, _ := json.Marshal(d.Target)
	meta := map[string]string{"dim": strconv.Itoa(d.Dim), "k": strconv.Itoa(d.K), "aux": string(aux), "target": string(tgt)}
	prompt := make([]byte, 4*len(d.Prompt))
	for i, v := range d.Prompt {
		binary.LittleEndian.PutUint32(prompt[4*i:], uint32(v))
	}
	S, N, A := d.Seqs(), d.Len(), len(d.Aux)
	ts := []weights.Tensor{
		{Name: "off", DType: weights.I64, Shape: []int{S + 1}, Data: i64Bytes(d.Off)},
		{Name: "kind", DType: weights.U8, Shape: []int{S}, Data: d.Kind},
		{Name: "prompt", DType: weights.I32, Shape: []int{S}, Data: prompt},
		{Name: "tokens", DType: weights.U16, Shape: []int{N}, Data: u16Bytes(d.Tokens)},
		{Name: "hidden", DType: weights.F16, Shape: []int{N, d.Dim}, Data: u16Bytes(d.Hidden)},
		{Name: "aux", DType: weights.F16, Shape: []int{N, A, d.Dim}, Data: u16Bytes(d.AuxF)},
		{Name: "top_id", DType: weights.U16, Shape: []int{N, d.K}, Data: u16Bytes(d.TopID)},
		{Name: "top_p", DType: weights.F16, Shape: []int{N, d.K}, Data: u16Bytes(d.TopP)},
	}
	return weights.WriteSafeTensors(path, ts, meta)
}

// LoadDataset reads a file Save wrote.
func LoadDataset(path string) (*Dataset, error) {
	st, err := weights.Open(path)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	m := st.Metadata()
	d := &Dataset{}
	var e1, e2 error
	d.Dim, e1 = strconv.Atoi(m["dim"])
	d.K, e2 = strconv.Atoi(m["k"])
	if e1 != nil || e2 != nil || json.Unmarshal([]byte(m["aux"]), &d.Aux) != nil || json.Unmarshal([]byte(m["target"]), &d.Target) != nil {
		return nil, fmt.Errorf("distill: %s: not a distill dataset (metadata %v)", path, m)
	}
	get := func(name string) ([]byte, error) {
		t, err := st.Tensor(name)
		if err != nil {
			return nil, fmt.Errorf("distill: %s: %w", path, err)
		}
		return t.Data, nil
	}
	u16 := func(name string) ([]uint16, error) {
		b, err := get(name)
		if err != nil {
			return nil, err
		}
		v := make([]uint16, len(b)/2)
		for i := range v {
			v[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
		return v, nil
	}
	b, err := get("off")
	if err != nil {
		return nil, err
	}
	for i := 0; i+8 <= len(b); i += 8 {
		d.Off = append(d.Off, int(binary.LittleEndian.Uint64(b[i:])))
	}
	if b, err = get("kind"); err != nil {
		return nil, err
	}
	d.Kind = append([]uint8(nil), b...)
	if b, err = get("prompt"); err != nil {
		return nil, err
	}
	for i := 0; i+4 <= len(b); i += 4 {
		d.Prompt = append(d.Prompt, int32(binary.LittleEndian.Uint32(b[i:])))
	}
	if d.Tokens, err = u16("tokens"); err != nil {
		return nil, err
	}
	if d.Hidden, err = u16("hidden"); err != nil {
		return nil, err
	}
	if d.AuxF, err = u16("aux"); err != nil {
		return nil, err
	}
	if d.TopID, err = u16("top_id"); err != nil {
		return nil, err
	}
	if d.TopP, err = u16("top_p"); err != nil {
		return nil, err
	}
	N := len(d.Tokens)
	if len(d.Off) < 1 || d.Off[len(d.Off)-1] != N || len(d.Kind) != d.Seqs() || len(d.Prompt) != d.Seqs() ||
		len(d.Hidden) != N*d.Dim || len(d.AuxF) != N*len(d.Aux)*d.Dim || len(d.TopID) != N*d.K || len(d.TopP) != N*d.K {
		return nil, fmt.Errorf("distill: %s: inconsistent dataset sizes", path)
	}
	return d, nil
}
