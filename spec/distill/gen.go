package distill

import (
	"bufio"
	"embed"
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"
	"strings"

	"github.com/wspec/wspec/weights"
)

// The committed prompts: story openings for training, and a set kept apart for evaluation
// (never used in training; `wspec bench` reads it too).
//
//go:embed prompts/train.txt prompts/eval.txt
var promptFS embed.FS

// Prompts reads a prompt set: "train" or "eval" (the committed ones), else a file path;
// one prompt a line, blank lines skipped.
func Prompts(name string) ([]string, error) {
	var b []byte
	var err error
	switch name {
	case "train", "eval":
		b, err = promptFS.ReadFile("prompts/" + name + ".txt")
	default:
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("distill: prompt set %q is empty", name)
	}
	return out, nil
}

// GenOptions say what Generate produces from each prompt.
type GenOptions struct {
	Greedy      int     // greedy sequences per prompt (more than one repeats the same)
	Sampled     int     // sequences sampled at Temperature / TopP (within the top K)
	Mixed       int     // sequences sampled for 1..32 tokens, then greedy
	Temperature float32 // default 0.8
	TopP        float32 // default 0.9
	MaxLen      int     // positions per sequence, prompt included (default the target's context)
	Batch       int     // sequences run together (default 64)
	K           int     // teacher entries kept per position (default 32)
	Aux         []int   // target layers whose input is recorded
	Seed        int64
	// Progress, when set, is told after every step how many sequences are done of how
	// many and how many positions have been recorded.
	Progress func(seqsDone, seqs, positions int)
}

// genJob is one sequence to generate.
type genJob struct {
	prompt []int
	kind   uint8
	mixed  int // sampled tokens before going greedy (GenMixed)
	seed   int64
}

// genSlot is a sequence being generated.
type genSlot struct {
	job    int
	cache  *KVCache
	toks   []int
	next   int // the token chosen to follow toks (past the prompt)
	done   bool
	rng    *rand.Rand
	hidden []uint16
	aux    []uint16
	topID  []uint16
	topP   []uint16
}

// Generate runs the target t over every prompt (token ids, BOS included) as o asks, in
// batches of o.Batch sequences fed one token each per step, recording a Dataset. A sequence
// ends after it feeds a stop token (the target's eos ids) or at o.MaxLen positions.
func Generate(t *Llama, id weights.TargetID, prompts [][]int, o GenOptions) (*Dataset, error) {
	c := t.Cfg
	if o.Temperature == 0 {
		o.Temperature = 0.8
	}
	if o.TopP == 0 {
		o.TopP = 0.9
	}
	if o.MaxLen == 0 || o.MaxLen > c.MaxSeq {
		o.MaxLen = c.MaxSeq
	}
	if o.Batch == 0 {
		o.Batch = 64
	}
	if o.K == 0 {
		o.K = 32
	}
	t32 := float64(o.Temperature)
	switch {
	case !(t32 > 0) || math.IsInf(t32, 0):
		return nil, fmt.Errorf("distill: temperature %v (want a finite value > 0)", o.Temperature)
	case !(o.TopP > 0 && o.TopP <= 1):
		return nil, fmt.Errorf("distill: top-p %v (want (0, 1])", o.TopP)
	case c.Vocab > 1<<16:
		return nil, fmt.Errorf("distill: %w: a vocabulary of %d tokens (a dataset keeps token ids in 16 bits: at most 65536)", weights.ErrUnsupported, c.Vocab)
	case o.K < 1 || o.K > c.Vocab:
		return nil, fmt.Errorf("distill: %d teacher probabilities per position (want 1..%d)", o.K, c.Vocab)
	case o.Batch < 1 || o.MaxLen < 2:
		return nil, fmt.Errorf("distill: batch %d, sequences of %d positions", o.Batch, o.MaxLen)
	case o.Greedy < 0 || o.Sampled < 0 || o.Mixed < 0 || o.Greedy+o.Sampled+o.Mixed == 0:
		return nil, fmt.Errorf("distill: %d greedy, %d sampled and %d mixed sequences per prompt (want some, none negative)",
			o.Greedy, o.Sampled, o.Mixed)
	}
	for _, a := range o.Aux {
		if a < 0 || a >= c.NLayers {
			return nil, fmt.Errorf("distill: aux layer %d of a %d-layer target", a, c.NLayers)
		}
	}
	var jobs []genJob
	rng := rand.New(rand.NewSource(o.Seed))
	for _, p := range prompts {
		if len(p) == 0 || len(p) >= o.MaxLen {
			return nil, fmt.Errorf("distill: a prompt of %d tokens for sequences of %d", len(p), o.MaxLen)
		}
		for range o.Greedy {
			jobs = append(jobs, genJob{prompt: p, kind: GenGreedy, seed: rng.Int63()})
		}
		for range o.Sampled {
			jobs = append(jobs, genJob{prompt: p, kind: GenSampled, seed: rng.Int63()})
		}
		for range o.Mixed {
			jobs = append(jobs, genJob{prompt: p, kind: GenMixed, mixed: 1 + rng.Intn(32), seed: rng.Int63()})
		}
	}
	dim, A, K := c.Dim, len(o.Aux), o.K
	results := make([]*genSlot, len(jobs))
	var active []*genSlot
	nextJob, done, positions := 0, 0, 0
	for done < len(jobs) {
		for len(active) < o.Batch && nextJob < len(jobs) {
			active = append(active, &genSlot{job: nextJob, cache: t.NewCache(), rng: rand.New(rand.NewSource(jobs[nextJob].seed))})
			nextJob++
		}
		rows := make([]Row, len(active))
		for i, s := range active {
			j := &jobs[s.job]
			tok := s.next
			if len(s.toks) < len(j.prompt) {
				tok = j.prompt[len(s.toks)]
			}
			s.toks = append(s.toks, tok)
			rows[i] = Row{Cache: s.cache, Token: tok}
		}
		out, err := t.Forward(rows, o.Aux, true)
		if err != nil {
			return nil, err
		}
		parallelFor(len(active), 1, func(lo, hi int) {
			ids, probs := make([]int32, K), make([]float32, K)
			for i := lo; i < hi; i++ {
				s, j := active[i], &jobs[active[i].job]
				for _, v := range out.Hidden[i*dim : (i+1)*dim] {
					s.hidden = append(s.hidden, weights.F32ToF16(v))
				}
				for _, v := range out.Aux[i*A*dim : (i+1)*A*dim] {
					s.aux = append(s.aux, weights.F32ToF16(v))
				}
				logits := out.Logits[i*c.Vocab : (i+1)*c.Vocab]
				argmax := topK(logits, ids, probs)
				for k := range K {
					s.topID = append(s.topID, uint16(ids[k]))
					s.topP = append(s.topP, weights.F32ToF16(probs[k]))
				}
				n := len(s.toks)
				last := s.toks[n-1]
				if n >= o.MaxLen || (n > len(j.prompt) && slices.Contains(c.EOS, last)) {
					s.done = true
					continue
				}
				if n < len(j.prompt) {
					continue
				}
				s.next = argmax
				if j.kind == GenSampled || (j.kind == GenMixed && n-len(j.prompt) < j.mixed) {
					s.next = sampleTop(ids, probs, o.Temperature, o.TopP, s.rng)
				}
			}
		})
		positions += len(active)
		kept := active[:0]
		for _, s := range active {
			if s.done {
				results[s.job] = s
				s.cache = nil
				done++
			} else {
				kept = append(kept, s)
			}
		}
		active = kept
		if o.Progress != nil {
			o.Progress(done, len(jobs), positions)
		}
	}
	d := &Dataset{Target: id, Dim: dim, K: K, Aux: slices.Clone(o.Aux), Off: []int{0}}
	for i, s := range results {
		d.Off = append(d.Off, d.Off[len(d.Off)-1]+len(s.toks))
		d.Kind = append(d.Kind, jobs[i].kind)
		d.Prompt = append(d.Prompt, int32(len(jobs[i].prompt)))
		for _, tok := range s.toks {
			d.Tokens = append(d.Tokens, uint16(tok))
		}
		d.Hidden = append(d.Hidden, s.hidden...)
		d.AuxF = append(d.AuxF, s.aux...)
		d.TopID = append(d.TopID, s.topID...)
		d.TopP = append(d.TopP, s.topP...)
		results[i] = nil
	}
	return d, nil
}

// sampleTop draws a token from the target's distribution at temperature temp cut to its
// top-p nucleus, computed from its top-K probabilities at temperature 1 (ids, probs, most
// likely first): p^(1/temp) renormalised over the K. The nucleus of a peaked distribution
// lies well inside the top 32; the mass beyond them is left out.
func sampleTop(ids []int32, probs []float32, temp, topP float32, rng *rand.Rand) int {
	var q [64]float32
	n := min(len(ids), len(q))
	var sum float32
	for i := range n {
		if probs[i] > 0 {
			q[i] = float32(math.Pow(float64(probs[i]), float64(1/temp)))
		}
		sum += q[i]
	}
	m, cum := 0, float32(0)
	for m < n && cum < topP*sum {
		cum += q[m]
		m++
	}
	u := rng.Float32() * cum
	for i := range m {
		u -= q[i]
		if u <= 0 {
			return int(ids[i])
		}
	}
	return int(ids[m-1])
}
