package spec

import (
	"errors"
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

// ErrVocabMismatch is wrapped by the error for a draft model whose vocabulary size is not
// the target's (it cannot share the target's token ids).
var ErrVocabMismatch = errors.New("draft model vocabulary differs from the target's")

func init() {
	Register("draft_model", func(cfg Config, env Env) (Drafter, error) {
		dir := env.ModelDir
		if dir == "" {
			dir = cfg.Model
		}
		return LoadDraftModel(dir, env)
	})
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
	// owned: the drafter loaded m itself and frees it on Release.
	owned bool
}

// LoadDraftModel loads the Llama-family checkpoint folder dir onto env.Device (a device of its
// own when nil), in the target's weight type. Its vocabulary size must be env.Vocab (when
// set): otherwise the error wraps ErrVocabMismatch.
func LoadDraftModel(dir string, env Env) (*DraftModel, error) {
	if dir == "" {
		return nil, fmt.Errorf("no draft model folder")
	}
	host, err := weights.LoadLlama(dir, nil)
	if err != nil {
		return nil, err
	}
	vocab := env.Vocab
	if vocab == 0 && env.Target != nil {
		vocab = env.Target.Cfg.Vocab
	}
	if vocab > 0 && host.Cfg.Vocab != vocab {
		return nil, fmt.Errorf("%w: %s has a vocabulary of %d tokens, the target %d", ErrVocabMismatch, dir, host.Cfg.Vocab, vocab)
	}
	dev := env.Device
	if dev == nil && env.Target != nil {
		dev = env.Target.Device()
	}
	if dev == nil {
		if dev, err = runtime.OpenDevice(""); err != nil {
			return nil, err
		}
	}
	// One sequence: a pool of one context's pages (the default holds two); it never verifies.
	const pageSize = 16
	opts := model.Options{MaxDraft: 1, PageSize: pageSize, Pages: (host.Cfg.MaxSeq + pageSize - 1) / pageSize}
	if env.Target != nil {
		opts.Weights = env.Target.Opts.Weights
	}
	m, err := model.New(dev, host, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	d, err := NewDraftModel(m, vocab)
	if err != nil {
		m.Release()
		return nil, err
	}
	d.owned = true
	return d, nil
}

// NewDraftModel drafts with m, a model already on the device, in a new sequence of its own.
// targetVocab (0: unchecked) must be m's vocabulary size.
func NewDraftModel(m *model.Model, targetVocab int) (*DraftModel, error) {
	if targetVocab > 0 && m.Cfg.Vocab != targetVocab {
		return nil, fmt.Errorf("%w: the draft model has %d tokens, the target %d", ErrVocabMismatch, m.Cfg.Vocab, targetVocab)
	}
	return &DraftModel{m: m, sess: m.NewSession()}, nil
}

// Name is "draft_model".
func (d *DraftModel) Name() string { return "draft_model" }

// Propose catches the draft model's KV up with ctx and decodes k tokens greedily, one forward
// pass each; fewer when its context fills up.
func (d *DraftModel) Propose(ctx []int, k int) ([]int, []float32, error) {
	if k <= 0 || len(ctx) == 0 {
		return nil, nil, nil
	}
	// The KV must lack at least the newest token, whose logits give the first draft.
	d.rollback(min(commonPrefix(d.fed, ctx), len(ctx)-1))
	// Draft j (1-based) needs len(ctx) + j - 1 tokens in the KV.
	k = min(k, d.m.Cfg.MaxSeq-len(ctx)+1)
	if k <= 0 {
		return nil, nil, nil
	}
	feed := ctx[len(d.fed):]
	drafts := make([]int, 0, k)
	for len(drafts) < k {
		out, err := d.sess.Forward(feed, 0, nil, model.Sampling{})
		if err != nil {
			return nil, nil, err
		}
		d.fed = append(d.fed, feed...)
		drafts = append(drafts, out[0])
		feed = out[:1]
	}
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

// Release frees the draft sequence's pages, and the model when the drafter loaded it.
func (d *DraftModel) Release() {
	d.sess.Release()
	if d.owned {
		d.m.Release()
	}
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
