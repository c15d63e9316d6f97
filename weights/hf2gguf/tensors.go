package hf2gguf

import (
	"fmt"
	"io"
	"strings"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/gguf"
)

// chunkFloats bounds the rows read from the checkpoint at a time.
const chunkFloats = 1 << 20

// modelTensors lists the file's tensors under llama.cpp's names, each written from the
// checkpoint when its turn comes.
func modelTensors(c *weights.Config, ck *weights.Checkpoint, arch string, o Options) ([]gguf.Tensor, error) {
	var out []gguf.Tensor
	add := func(gname, hfName string, heads int, plusOne bool, role tensorRole, layer int) error {
		rows, cols, _, err := ck.Shape(hfName)
		if err != nil {
			return err
		}
		t := gguf.Tensor{Name: gname, Dims: []uint64{uint64(cols)}, Type: gguf.F32}
		if rows > 1 {
			t.Dims, t.Type = []uint64{uint64(cols), uint64(rows)}, o.FileType.matrixType(role, layer, c.NLayers, cols)
		}
		switch permute := heads > 0 && arch == "llama" && !o.NoPermute; {
		case permute && rows > 1:
			t.Write = permuted(ck, hfName, rows, cols, heads, t.Type)
		case permute:
			t.Write = permuted(ck, hfName, cols, 1, heads, t.Type) // a bias: one value a row
		default:
			t.Write = plain(ck, hfName, rows, cols, t.Type, plusOne)
		}
		out = append(out, t)
		return nil
	}
	type step struct {
		gname, hf string
		heads     int // q and k: the heads whose rows llama's rope permutes
		role      tensorRole
		layer     int
	}
	embedRole := roleEmbed
	if c.TieEmbed {
		embedRole = roleOutput // llama-quantize gives a tied embedding the output's type
	}
	steps := []step{{"token_embd.weight", weights.EmbedTensorName, 0, embedRole, 0}}
	for i := 0; i < c.NLayers; i++ {
		l := func(g, s string, heads int) {
			role := roleOther
			switch g {
			case "attn_v.weight":
				role = roleAttnV
			case "ffn_down.weight":
				role = roleFFNDown
			}
			steps = append(steps, step{fmt.Sprintf("blk.%d.%s", i, g), weights.LayerTensorName(i, s), heads, role, i})
		}
		if c.PostNorms {
			l("post_attention_norm.weight", weights.PostAttnNormSuffix, 0)
			l("post_ffw_norm.weight", weights.PostFFNNormSuffix, 0)
		}
		l("attn_norm.weight", weights.AttnNormSuffix, 0)
		l("attn_q.weight", weights.WqSuffix, c.NHeads)
		l("attn_k.weight", weights.WkSuffix, c.NKVHeads)
		l("attn_v.weight", weights.WvSuffix, 0)
		l("attn_output.weight", weights.WoSuffix, 0)
		if c.AttnBias {
			l("attn_q.bias", weights.BqSuffix, c.NHeads)
			l("attn_k.bias", weights.BkSuffix, c.NKVHeads)
			l("attn_v.bias", weights.BvSuffix, 0)
		}
		if c.QKNorm {
			l("attn_q_norm.weight", weights.QNormSuffix, 0)
			l("attn_k_norm.weight", weights.KNormSuffix, 0)
		}
		l("ffn_norm.weight", c.FFNNormSuffix(), 0)
		l("ffn_gate.weight", weights.GateSuffix, 0)
		l("ffn_up.weight", weights.UpSuffix, 0)
		l("ffn_down.weight", weights.DownSuffix, 0)
	}
	steps = append(steps, step{"output_norm.weight", weights.NormTensorName, 0, roleOther, 0})
	if !c.TieEmbed {
		steps = append(steps, step{"output.weight", weights.LMHeadTensorName, 0, roleOutput, 0})
	}
	for _, s := range steps {
		// Gemma's norms multiply by 1 + w; llama.cpp's by the stored value.
		plusOne := c.NormPlusOne && !o.NoNormShift && strings.HasSuffix(s.hf, "norm.weight")
		if err := add(s.gname, s.hf, s.heads, plusOne, s.role, s.layer); err != nil {
			return nil, err
		}
	}
	if c.RopeScaling != nil && !c.RopeScaling.Linear && !o.NoRopeScaling {
		f := RopeFreqs(c)
		out = append(out, gguf.Tensor{Name: "rope_freqs.weight", Dims: []uint64{uint64(len(f))}, Type: gguf.F32,
			Write: gguf.Bytes(f32Bytes(f))})
	}
	return out, nil
}

// plain writes a tensor's rows as they are (plus one when plusOne), a chunk at a time.
func plain(ck *weights.Checkpoint, name string, rows, cols int, t gguf.TensorType, plusOne bool) func(io.Writer) error {
	return func(w io.Writer) error {
		step := max(1, chunkFloats/max(cols, 1))
		buf := make([]float32, min(step, rows)*cols)
		for r := 0; r < rows; r += step {
			n := min(step, rows-r)
			if err := ck.Rows(name, r, buf[:n*cols]); err != nil {
				return err
			}
			if plusOne {
				for i := range buf[:n*cols] {
					buf[i]++
				}
			}
			if err := writeRows(w, buf[:n*cols], t); err != nil {
				return err
			}
		}
		return nil
	}
}

// permuted writes q or k (rows of heads heads) with each head's rows reordered for llama.cpp's
// rope, which rotates adjacent pairs where Hugging Face rotates halves: row j of the first half
// goes to 2j, row j of the second half to 2j + 1 (convert_hf_to_gguf.py's permute). A bias
// (rows values of one column) is reordered the same way.
func permuted(ck *weights.Checkpoint, name string, rows, cols, heads int, t gguf.TensorType) func(io.Writer) error {
	return func(w io.Writer) error {
		hd := rows / heads
		if hd*heads != rows || hd%2 != 0 {
			return fmt.Errorf("hf2gguf: %s: %d rows are not %d heads of an even width", name, rows, heads)
		}
		head := make([]float32, hd*cols)
		perm := make([]float32, hd*cols)
		for h := 0; h < heads; h++ {
			if cols == 1 { // a bias, read whole once
				all := make([]float32, rows)
				if err := ck.Rows(name, 0, all); err != nil {
					return err
				}
				copy(head, all[h*hd:(h+1)*hd])
			} else if err := ck.Rows(name, h*hd, head); err != nil {
				return err
			}
			for j := 0; j < hd/2; j++ {
				copy(perm[(2*j)*cols:(2*j+1)*cols], head[j*cols:(j+1)*cols])
				copy(perm[(2*j+1)*cols:(2*j+2)*cols], head[(hd/2+j)*cols:(hd/2+j+1)*cols])
			}
			if err := writeRows(w, perm, t); err != nil {
				return err
			}
		}
		return nil
	}
}
