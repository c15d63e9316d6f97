package spec

import (
	"errors"
	"fmt"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

// ErrVocabMismatch is wrapped by the error for a draft model whose vocabulary size is not
// the target's (it cannot share the target's token ids).
var ErrVocabMismatch = errors.New("draft model vocabulary differs from the target's")

func init() {
	Register("draft_model", func(cfg Config, target *weights.Config) (Checkpoint, error) {
		if cfg.Model == "" {
			return nil, fmt.Errorf("no draft model folder")
		}
		host, err := weights.LoadLlama(cfg.Model, nil)
		if err != nil {
			return nil, err
		}
		if host.Cfg.Vocab != target.Vocab {
			return nil, fmt.Errorf("%w: %s has a vocabulary of %d tokens, the target %d", ErrVocabMismatch, cfg.Model, host.Cfg.Vocab, target.Vocab)
		}
		return draftCheckpoint{dir: cfg.Model, host: host}, nil
	})
}

type draftCheckpoint struct {
	dir  string
	host *weights.LlamaWeights
}

func (c draftCheckpoint) AuxLayers() []int { return nil }

// Load puts the draft model on the target's device in the target's weight type, with a page
// pool of two contexts (it never verifies).
func (c draftCheckpoint) Load(target *model.Model) (Method, error) {
	if c.host.Cfg.Vocab != target.Cfg.Vocab {
		return nil, fmt.Errorf("%w: %s has a vocabulary of %d tokens, the target %d", ErrVocabMismatch, c.dir, c.host.Cfg.Vocab, target.Cfg.Vocab)
	}
	m, err := model.New(target.Device(), c.host, model.Options{MaxDraft: 1, Weights: target.Opts.Weights})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.dir, err)
	}
	return &DraftModelMethod{m: m, owned: true}, nil
}

// DraftModelMethod is a draft model on the device, shared by the sequences' DraftModels.
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
func (dm *DraftModelMethod) NewDrafter(Target) (Drafter, error) {
	return &DraftModel{m: dm.m, sess: dm.m.NewSession()}, nil
}

// Release frees the draft model when the method loaded it.
func (dm *DraftModelMethod) Release() {
	if dm.owned {
		dm.m.Release()
	}
}

// DraftModel drafts with a smaller model of the same family and tokenizer (vLLM's
// "draft_model"): it decodes greedily k tokens after ctx in its own sequence (its own paged KV
// cache) and proposes them one-hot (q nil), which the rejection sampler verifies losslessly.
//
// Its KV holds the tokens in fed. Propose first feeds the tokens of ctx the KV lacks (at the
// first call the whole prompt), then drafts; Accept truncates the KV to the longest common
// prefix of fed and the final ctx, dropping the rejected drafts.
type DraftModel struct {
	m    *model.Model
	sess *model.Session
	fed  []int // the tokens in the KV
}

// Name is "draft_model".
func (d *DraftModel) Name() string { return "draft_model" }

// Propose catches the draft model's KV up with ctx and decodes k tokens greedily, all in one
// submit (Session.DecodeChain); fewer when its context fills up.
func (d *DraftModel) Propose(ctx []int, k int) ([]int, []float32, error) {
	if k <= 0 || len(ctx) == 0 {
		return nil, nil, nil
	}
	// The KV must lack at least the newest token, whose logits give the first draft.
	d.rollback(min(commonPrefix(d.fed, ctx), len(ctx)-1))
	// Draft j (1-based) needs len(ctx) + j - 1 tokens in the KV.
	k = min(k, d.m.Cfg.MaxSeq-len(ctx)+1, model.MaxChain)
	if k <= 0 {
		return nil, nil, nil
	}
	feed := ctx[len(d.fed):]
	drafts, err := d.sess.DecodeChain(feed, k)
	if err != nil {
		return nil, nil, err
	}
	d.fed = append(append(d.fed, feed...), drafts[:k-1]...)
	return drafts, nil, nil
}

// Accept drops the KV of the drafts ctx did not keep.
func (d *DraftModel) Accept(ctx []int) error {
	d.rollback(commonPrefix(d.fed, ctx))
	return nil
}

// rollback keeps the first n fed tokens.
func (d *DraftModel) rollback(n int) {
	d.fed = d.fed[:n]
	d.sess.Truncate(n)
}

// Release frees the draft sequence's pages.
func (d *DraftModel) Release() { d.sess.Release() }

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
