package model

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

func randomWeights(cfg weights.Config) *weights.LlamaWeights { return ref.RandomLlama(cfg, 1) }

// writeHF writes w as a Hugging Face Llama folder (config.json + model.safetensors) with
// tensors of dtype dt ("F32", "F16" or "BF16").
func writeHF(t *testing.T, dir string, w *weights.LlamaWeights, dt string) {
	t.Helper()
	c := w.Cfg
	mk := func(name string, v []float32, shape ...int) weights.Tensor {
		switch dt {
		case "F16":
			return weights.F16Tensor(name, shape, v)
		case "BF16":
			return weights.BF16Tensor(name, shape, v)
		}
		return weights.F32Tensor(name, shape, v)
	}
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	ts := []weights.Tensor{mk("model.embed_tokens.weight", w.Embed, c.Vocab, c.Dim), mk("model.norm.weight", w.Norm, c.Dim)}
	if !c.TieEmbed {
		ts = append(ts, mk("lm_head.weight", w.LMHead, c.Vocab, c.Dim))
	}
	for i, l := range w.Layers {
		n := func(s string) string { return weights.LayerTensorName(i, s) }
		ts = append(ts,
			mk(n(weights.AttnNormSuffix), l.AttnNorm, c.Dim), mk(n(c.FFNNormSuffix()), l.FFNNorm, c.Dim),
			mk(n(weights.WqSuffix), l.Wq, q, c.Dim), mk(n(weights.WkSuffix), l.Wk, kv, c.Dim),
			mk(n(weights.WvSuffix), l.Wv, kv, c.Dim), mk(n(weights.WoSuffix), l.Wo, c.Dim, q),
			mk(n(weights.GateSuffix), l.WGate, c.HiddenDim, c.Dim), mk(n(weights.UpSuffix), l.WUp, c.HiddenDim, c.Dim),
			mk(n(weights.DownSuffix), l.WDown, c.Dim, c.HiddenDim))
		if c.AttnBias {
			ts = append(ts, mk(n(weights.BqSuffix), l.Bq, q), mk(n(weights.BkSuffix), l.Bk, kv), mk(n(weights.BvSuffix), l.Bv, kv))
		}
		if c.QKNorm {
			ts = append(ts, mk(n(weights.QNormSuffix), l.QNorm, c.HeadDim), mk(n(weights.KNormSuffix), l.KNorm, c.HeadDim))
		}
		if c.PostNorms {
			ts = append(ts, mk(n(weights.PostAttnNormSuffix), l.PostAttn, c.Dim), mk(n(weights.PostFFNNormSuffix), l.PostFFN, c.Dim))
		}
	}
	if err := weights.WriteSafeTensors(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := weights.WriteConfig(dir, &c); err != nil {
		t.Fatal(err)
	}
}

// TestHFCheckpointLogits: random checkpoints written in Hugging Face format (F32, F16, BF16
// files; GQA; tied and untied; biases; Llama-3 rope scaling) stream to the device from their
// files (in chunks of a few rows, so that chunks cross the fused matrices' parts and the
// weights' blocks), and the device's logits match the reference forward of the weights read
// whole, with f32 and f16 device weights (16-bit files go to an f16 device as half-precision
// bits, never through float32).
func TestHFCheckpointLogits(t *testing.T) {
	d := testDevice(t)
	defer func(old int) { chunkBytes = old }(chunkBytes)
	chunkBytes = 3000
	for ci, cfg := range testConfigs {
		for _, c := range []struct {
			dt string
			wt wgsl.WeightType
		}{{"F32", wgsl.F32}, {"F32", wgsl.F16}, {"F16", wgsl.F16}, {"BF16", wgsl.F16}} {
			dt, wt := c.dt, c.wt
			t.Run(fmt.Sprintf("%d-%s-%v", ci, dt, wt), func(t *testing.T) {
				dir := t.TempDir()
				writeHF(t, dir, ref.RandomLlama(cfg, int64(10+ci)), dt)
				host, err := weights.LoadLlama(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				if host.Cfg.TieEmbed != cfg.TieEmbed || host.Cfg.NKVHeads != cfg.NKVHeads || (host.Cfg.RopeScaling != nil) != (cfg.RopeScaling != nil) {
					t.Fatalf("config did not round-trip: %+v", host.Cfg)
				}
				ck, err := weights.OpenCheckpoint(dir)
				if err != nil {
					t.Fatal(err)
				}
				defer ck.Close()
				var progress int64
				m, err := Load(d, host.Cfg, ck, Options{Weights: wt, PageSize: 16, Progress: func(done, total int64) {
					if done > total || done < progress {
						t.Errorf("progress %d of %d after %d", done, total, progress)
					}
					progress = done
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Release()
				if size := fileSize(t, filepath.Join(dir, "model.safetensors")); progress == 0 || progress > size {
					t.Errorf("progress reached %d of a %d-byte file", progress, size)
				}
				toks := []int{1, 2, 3, 5, 8, 13, 21, 34}
				if _, err := m.Forward(m.Pool().NewSequence(), toks, 0, nil, batch.Sampling{}); err != nil {
					t.Fatal(err)
				}
				got, err := m.Logits(1)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := ref.NewLlamaState(host).Forward(toks)
				want = want[(len(toks)-1)*cfg.Vocab:]
				tol := 2e-4 // f32 weights, f32 activations
				if dt == "BF16" || (dt == "F32" && wt == wgsl.F16) {
					tol = 2e-3 // rounded to f16 on the way (bf16 values are exact in f16 only when their exponent fits)
				} else if dt == "F16" {
					tol = 5e-4
				}
				if e, at := maxRelErr(got, want); e > tol {
					t.Fatalf("logits off by %.2g (relative to max) at %d: got %v want %v", e, at, got[at], want[at])
				}
			})
		}
	}
}

// TestSplitWeights: with a storage binding limit far below the weights' sizes, every weight
// is uploaded in row parts (the embedding gather and each mat-vec dispatched per part), and
// the logits still match the reference.
func TestSplitWeights(t *testing.T) {
	d, err := runtime.OpenDevice(runtime.AdapterChoice(""))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	d.Limits.MaxStorageBufferBindingSize = 8 << 10 // 8 KiB: the 300 x 64 f32 embedding is 10 parts
	cfg := testConfigs[0]
	w := ref.RandomLlama(cfg, 21)
	m, err := New(d, w, Options{PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if n := m.embed.Parts(); n < 10 {
		t.Fatalf("embedding in %d parts, want >= 10", n)
	}
	stepsMatchReference(t, m, w, [][]int{{299, 0, 150, 7, 151, 298}, {42}})
}

// stepsMatchReference runs steps (a prompt, then decode steps) on one sequence of m and checks
// each step's last logits against the reference forward of w, within 2e-4 of the largest.
func stepsMatchReference(t *testing.T, m *Model, w *weights.LlamaWeights, steps [][]int) {
	t.Helper()
	st := ref.NewLlamaState(w)
	seq := m.Pool().NewSequence()
	for _, step := range steps {
		if _, err := m.Forward(seq, step, 0, nil, batch.Sampling{}); err != nil {
			t.Fatal(err)
		}
		got, err := m.Logits(1)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := st.Forward(step)
		want = want[(len(step)-1)*w.Cfg.Vocab:]
		if e, at := maxRelErr(got, want); e > 2e-4 {
			t.Fatalf("logits off by %.2g (relative to max) at %d: got %v want %v", e, at, got[at], want[at])
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
