package synth

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/wspec/wspec/weights"
)

// pad copies a [rows, cols] matrix into the top-left corner of a zero [R, C] one.
func pad(src []float32, rows, cols, R, C int) []float32 {
	if src == nil {
		return nil
	}
	out := make([]float32, R*C)
	for r := range rows {
		copy(out[r*C:r*C+cols], src[r*cols:(r+1)*cols])
	}
	return out
}

// InflateMedusa pads a Medusa head for a target inflated to hidden: it reads the target's
// final-normed hidden state, which inflated is the small one's followed by zeros, so its
// blocks grow with zero rows and columns (SiLU(0) = 0 keeps the new entries 0) and its output
// layers with zero columns.
func InflateMedusa(m *weights.Medusa, hidden int) (*weights.Medusa, error) {
	H := m.Dim
	if hidden < H {
		return nil, fmt.Errorf("%w: hidden %d is smaller than the head's %d", ErrInflate, hidden, H)
	}
	out := &weights.Medusa{Dim: hidden, Vocab: m.Vocab, Layers: m.Layers, Layout: m.Layout}
	for _, blocks := range m.Blocks {
		var head []weights.MedusaBlock
		for _, b := range blocks {
			head = append(head, weights.MedusaBlock{W: pad(b.W, H, H, hidden, hidden), B: pad(b.B, 1, H, 1, hidden)})
		}
		out.Blocks = append(out.Blocks, head)
	}
	for _, o := range m.Out {
		out.Out = append(out.Out, pad(o, m.Vocab, H, m.Vocab, hidden))
	}
	return out, nil
}

// InflateEagle pads an EAGLE or EAGLE-3 head for a target inflated from small (whose
// tensors embed reads: "model.embed_tokens.weight") to size.
//
// EAGLE-3 keeps its own hidden size: only its fc, which reads three target features, grows
// zero columns where the features' new entries are; its aux layers are written out (the
// default choice depends on the target's depth), and a head that used the target's embedding
// gets the small target's as its own.
//
// EAGLE-1 works in the target's hidden size: its layer is inflated as a target layer is
// (zero columns where it reads the stream, zero rows where it writes it, its norm and eps
// scaled), and its fc reads [embedding; feature] with each half padded.
func InflateEagle(e *weights.Eagle, small weights.Config, embed weights.TensorSource, size Size) (*weights.Eagle, error) {
	big, _, err := Inflate(small, nil, size)
	if err != nil {
		return nil, err
	}
	out := *e
	switch e.Kind {
	case weights.EagleKind3:
		Ht, Ht2, H := e.TargetHidden, big.Dim, e.Cfg.Dim
		fc := e.FC
		if fc == nil { // 3Ht == H: the features went in as they are
			fc = make([]float32, H*3*Ht)
			for i := range H {
				fc[i*3*Ht+i] = 1
			}
		}
		out.FC = make([]float32, H*3*Ht2)
		for r := range H {
			for b := range 3 {
				copy(out.FC[r*3*Ht2+b*Ht2:r*3*Ht2+b*Ht2+Ht], fc[r*3*Ht+b*Ht:r*3*Ht+(b+1)*Ht])
			}
		}
		out.TargetHidden = Ht2
		if out.AuxLayerIDs, err = e.AuxLayers(small.NLayers); err != nil {
			return nil, err
		}
		if e.Embed == nil {
			if H != small.Dim {
				return nil, fmt.Errorf("%w: an EAGLE-3 head of hidden %d on the target's embedding of %d", ErrInflate, H, small.Dim)
			}
			out.Embed = make([]float32, small.Vocab*small.Dim)
			if err := embed.Rows(weights.EmbedTensorName, 0, out.Embed); err != nil {
				return nil, err
			}
		}
		return &out, nil
	case weights.EagleKind1:
		H, H2 := e.Cfg.Dim, big.Dim
		if H != small.Dim {
			return nil, fmt.Errorf("%w: an EAGLE head of hidden %d for a target of %d", ErrInflate, H, small.Dim)
		}
		c := e.Cfg
		q, kv, I := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim, c.HiddenDim
		out.Cfg.Dim = H2
		out.Cfg.RMSEps = c.RMSEps * float64(H) / float64(H2)
		out.TargetHidden = H2
		out.Embed = pad(e.Embed, c.Vocab, H, c.Vocab, H2)
		out.FC = make([]float32, H2*2*H2)
		for r := range H {
			copy(out.FC[r*2*H2:r*2*H2+H], e.FC[r*2*H:r*2*H+H])
			copy(out.FC[r*2*H2+H2:r*2*H2+H2+H], e.FC[r*2*H+H:(r+1)*2*H])
		}
		out.FCBias = pad(e.FCBias, 1, H, 1, H2)
		out.Wq, out.Wk, out.Wv = pad(e.Wq, q, H, q, H2), pad(e.Wk, kv, H, kv, H2), pad(e.Wv, kv, H, kv, H2)
		out.Wo = pad(e.Wo, H, q, H2, q)
		out.WGate, out.WUp, out.WDown = pad(e.WGate, I, H, I, H2), pad(e.WUp, I, H, I, H2), pad(e.WDown, H, I, H2, I)
		scale := float32(math.Sqrt(float64(H) / float64(H2)))
		out.PostNorm = pad(e.PostNorm, 1, H, 1, H2)
		for i := range H {
			out.PostNorm[i] *= scale
		}
		out.D2T = slices.Clone(e.D2T)
		return &out, nil
	}
	return nil, fmt.Errorf("%w: EAGLE kind %q", ErrInflate, e.Kind)
}

// WriteInflatedDrafter inflates the drafter in drafterDir (method medusa, eagle or eagle3),
// made for the Hugging Face folder small, for small inflated to size, and writes it into dir
// (which must not exist) in dtype.
func WriteInflatedDrafter(dir, method, drafterDir, small string, size Size, dtype weights.DType) error {
	w, err := weights.OpenWeights(small)
	if err != nil {
		return err
	}
	defer w.Close()
	big, _, err := Inflate(*w.Config, nil, size)
	if err != nil {
		return err
	}
	return weights.WriteFolder(dir, false, func(tmp string) error {
		switch method {
		case "medusa":
			m, err := weights.LoadMedusa(drafterDir, w.Config)
			if err != nil {
				return err
			}
			if m, err = InflateMedusa(m, big.Dim); err != nil {
				return err
			}
			return weights.WriteMedusa(tmp, m, m.Layout, dtype)
		case weights.EagleKind1, weights.EagleKind3:
			e, err := weights.LoadEagle(drafterDir, method, w.Config)
			if err != nil {
				return err
			}
			if e, err = InflateEagle(e, *w.Config, w.Source, size); err != nil {
				return err
			}
			return weights.WriteEagle(tmp, e, weights.EagleWriteOptions{DType: dtype})
		}
		return fmt.Errorf("%w: drafter method %q (medusa, eagle or eagle3; a draft model needs none: the small model drafts for its inflation)", ErrInflate, method)
	})
}

// WriteRetargeted writes a copy of the draft model in drafterDir (a Hugging Face folder),
// made for a small model, into dir (which must not exist), naming targetDir, that model
// inflated, as its target (weights.TargetIDKey). A draft model reads no feature of its
// target, only tokens, so it needs no inflation: its target computes the same function as the
// one it was trained for, and only the fingerprint the loader checks changes.
func WriteRetargeted(dir, drafterDir, targetDir string) error {
	m, err := weights.OpenWeights(targetDir)
	if err != nil {
		return err
	}
	id, err := weights.TargetIDOfSource(filepath.Base(filepath.Clean(targetDir)), m.Config, m.Source)
	m.Close()
	if err != nil {
		return err
	}
	files, err := os.ReadDir(drafterDir)
	if err != nil {
		return err
	}
	return weights.WriteFolder(dir, false, func(tmp string) error {
		for _, f := range files {
			if !f.Type().IsRegular() {
				continue
			}
			if err := copyFile(filepath.Join(tmp, f.Name()), filepath.Join(drafterDir, f.Name())); err != nil {
				return err
			}
		}
		return weights.WriteTargetID(tmp, id)
	})
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
