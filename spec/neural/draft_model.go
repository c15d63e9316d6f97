package neural

import (
	"errors"
	"fmt"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// ErrVocabMismatch is wrapped by the error for a draft model whose vocabulary size is not
// the target's (it cannot share the target's token ids).
var ErrVocabMismatch = errors.New("draft model vocabulary differs from the target's")

func init() {
	spec.Register("draft_model", func(cfg spec.Config, target *weights.Config) (spec.Checkpoint, error) {
		// A Hugging Face folder or a GGUF file: opened here to check its tensors before the
		// target loads (nothing is read but headers), read when it loads.
		wm, err := weights.OpenDraft(cfg.Model, target)
		if err != nil {
			return nil, err
		}
		c := wm.Config
		wm.Close()
		if c.Vocab != target.Vocab {
			return nil, fmt.Errorf("%w: %s has a vocabulary of %d tokens, the target %d", ErrVocabMismatch, cfg.Model, c.Vocab, target.Vocab)
		}
		return draftCheckpoint{path: cfg.Model, kvWidth: c.NKVHeads * c.HeadDim}, nil
	})
}

// draftCheckpoint is a draft model not yet opened: its weights are read when it loads.
type draftCheckpoint struct {
	path    string
	kvWidth int // one layer's K (or V) values a token
}

func (c draftCheckpoint) Needs() spec.Needs { return spec.Needs{KVWidth: c.kvWidth} }

// Load streams the draft model to the target's device (its float matrices in the target's
// weight type, quantized GGUF ones as they are, its KV cache in the target's KV type), with a
// page pool holding as many tokens as the target's and every sequence's drafts (it never
// verifies: one draft row).
func (c draftCheckpoint) Load(target *model.Model) (spec.Method, error) {
	wm, err := weights.OpenDraft(c.path, &target.Cfg)
	if err != nil {
		return nil, err
	}
	defer wm.Close()
	o := target.Opts
	ps := o.PageSize
	m, err := model.Load(target.Device(), *wm.Config, wm.Source, model.Options{MaxDraft: 1, Weights: o.Weights, KVType: o.KVType, PageSize: ps,
		Pages: o.Pages + o.MaxSeqs*((model.MaxChain+ps-1)/ps+1), MaxSeqs: o.MaxSeqs})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	return &DraftModelMethod{m: m, owned: true}, nil
}

// DraftModelMethod drafts with a smaller model of the same family and tokenizer (vLLM's
// "draft_model"), on the device, shared by the sequences' drafters: each sequence has its own
// sequence (paged KV cache) on it. Propose feeds each sequence's draft model the tokens its
// cache lacks, then decodes K tokens greedily for all of them together, each token the input
// of the next (model.DecodeChains: one submit when each lacks only its newest token, two
// otherwise). A greedy sequence's drafts are the argmax tokens, proposed one-hot (Q nil); a
// sequence sampled at a temperature T gets drafts sampled from softmax(logits / T) with that
// distribution as Q. The rejection sampler keeps the output the target's either way.
type DraftModelMethod struct {
	m     *model.Model
	owned bool // Release frees m
}

// NewDraftModelMethod drafts with m, a model already on the device (Release leaves it).
// targetVocab (0: unchecked) must be m's vocabulary size.
func NewDraftModelMethod(m *model.Model, targetVocab int) (*DraftModelMethod, error) {
	if targetVocab > 0 && m.Cfg.Vocab != targetVocab {
		return nil, fmt.Errorf("%w: the draft model has %d tokens, the target %d", ErrVocabMismatch, m.Cfg.Vocab, targetVocab)
	}
	return &DraftModelMethod{m: m}, nil
}

// Name is "draft_model".
func (dm *DraftModelMethod) Name() string { return "draft_model" }

// NewDrafter starts a sequence of its own on the draft model.
func (dm *DraftModelMethod) NewDrafter() (spec.Drafter, error) {
	return &draftModelDrafter{m: dm, seq: dm.m.Pool().NewSequence()}, nil
}

// Propose drafts for every proposal in one batch of chains. A draft model's KV must lack at
// least a sequence's newest token, whose logits give its first draft; draft j needs
// len(ctx)+j-1 tokens in the KV, so k stops at the end of the draft model's context.
func (dm *DraftModelMethod) Propose(ps []spec.Proposal) error {
	var chains []model.Chain
	var idx []int
	for i, p := range ps {
		ps[i].Drafts, ps[i].Q = nil, nil
		d, ok := p.Drafter.(*draftModelDrafter)
		if !ok || d.m != dm || d.seq == nil {
			return fmt.Errorf("neural: draft_model: a proposal for another method's drafter")
		}
		if len(p.Ctx) == 0 {
			continue
		}
		d.rollback(min(commonPrefix(d.fed, p.Ctx), len(p.Ctx)-1))
		k := min(p.K, dm.m.Cfg.MaxSeq-len(p.Ctx)+1, model.MaxChain)
		if k <= 0 {
			continue
		}
		chains = append(chains, model.Chain{Seq: d.seq, Tokens: p.Ctx[len(d.fed):], K: k, Sampling: p.Sampling})
		idx = append(idx, i)
	}
	if err := dm.m.DecodeChains(chains); err != nil {
		return err
	}
	for j, i := range idx {
		d, c := ps[i].Drafter.(*draftModelDrafter), chains[j]
		d.fed = append(append(d.fed, c.Tokens...), c.Out[:c.K-1]...)
		ps[i].Drafts, ps[i].Q = c.Out, c.Q
	}
	return nil
}

// Release frees the draft model when the method loaded it.
func (dm *DraftModelMethod) Release() {
	if dm.owned {
		dm.m.Release()
	}
}

// draftModelDrafter is one sequence's draft model KV: it holds the tokens in fed. Accept
// truncates it to the longest common prefix of fed and the final context, dropping the
// rejected drafts.
type draftModelDrafter struct {
	m   *DraftModelMethod
	seq *kv.Sequence
	fed []int // the tokens in the KV
}

func (d *draftModelDrafter) Keep() batch.Slot { return 0 }

func (d *draftModelDrafter) Accept(ctx []int) error {
	d.rollback(commonPrefix(d.fed, ctx))
	return nil
}

// rollback keeps the first n fed tokens.
func (d *draftModelDrafter) rollback(n int) {
	d.fed = d.fed[:n]
	d.seq.Truncate(n)
}

func (d *draftModelDrafter) Release() {
	if d.seq != nil {
		d.seq.Release()
		d.seq = nil
	}
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
