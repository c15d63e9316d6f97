package model

import (
	"fmt"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// Loading streams the weights from their source (a checkpoint's files, or host tensors) to
// the device a bounded chunk of rows at a time, converting to the device's weight type on the
// way: no whole tensor, and no copy of the model, is ever held in host memory. Matrices the
// forward pass reads fused ([Wq; Wk; Wv], [Wgate; Wup]) are written part by part into one
// device matrix.

// chunkBytes is about how much of a tensor is read and converted at a time.
var chunkBytes = 8 << 20 // (a variable: tests make it small, to cross parts and blocks)

// flushBytes is how much is written through the queue before the writes are submitted and
// waited for, so that the driver's staging memory for them stays bounded.
const flushBytes = 128 << 20

// loader streams tensors from src to the device, counting the bytes for Options.Progress.
type loader struct {
	d           *runtime.Device
	src         weights.TensorSource
	weightType  wgsl.WeightType
	plusOne     bool // norms multiply by 1 + w (Gemma)
	done, total int64
	pending     int64 // bytes written since the last flush
	progress    weights.Progress
}

// part is a tensor that makes rows of a fused matrix.
type part struct {
	name string
	rows int
}

// matrix writes the tensors of parts, stacked by rows, as one [sum rows, k] device matrix.
// Tensors stored block-quantized (a GGUF file's) stay so on the device; the others, and a
// quantized run of rows the matrix cannot keep (not whole blocks of rows), go in the loader's
// float type.
func (l *loader) matrix(label string, k int, parts ...part) (*runtime.Linear, error) {
	groups, err := l.groups(k, parts)
	if err != nil {
		return nil, err
	}
	segs := make([]runtime.Segment, len(groups))
	for i, g := range groups {
		segs[i] = runtime.Segment{Rows: g.rows(), WT: g.wt}
	}
	lin, err := l.d.NewLinearSegments(label, k, segs)
	if err != nil {
		return nil, err
	}
	row := 0
	for _, g := range groups {
		hs, half := l.src.(weights.HalfSource)
		switch {
		case g.wt.Quantized():
			err = fillQuant(l, lin, row, g.parts, g.wt)
		case half && g.wt == wgsl.F16:
			err = fill(l, lin, row, g.parts, 2, hs.HalfRows, lin.WriteRowsF16) // F16 storage as it is
		default:
			err = fill(l, lin, row, g.parts, 1, l.src.Rows, lin.WriteRows)
		}
		if err != nil {
			lin.Release()
			return nil, err
		}
		row += g.rows()
	}
	return lin, nil
}

// group is a run of parts of a matrix that go to the device in one weight type.
type group struct {
	parts []part
	wt    wgsl.WeightType
}

func (g group) rows() (n int) {
	for _, p := range g.parts {
		n += p.rows
	}
	return n
}

// groups splits parts into runs of one device type: a quantized tensor's own type when the
// source keeps it and its rows start on a block of rows, else the loader's float type.
func (l *loader) groups(k int, parts []part) ([]group, error) {
	qs, _ := l.src.(weights.QuantSource)
	var out []group
	row := 0
	for i, p := range parts {
		wt := l.weightType
		if qs != nil {
			st, err := qs.StoredType(p.name)
			if err != nil {
				return nil, err
			}
			last := i == len(parts)-1
			if q, ok := runtime.QuantType(st); ok && row%runtime.Block == 0 && (last || p.rows%runtime.Block == 0) {
				wt = q
			}
		}
		if n := len(out); n > 0 && out[n-1].wt == wt {
			out[n-1].parts = append(out[n-1].parts, p)
		} else {
			out = append(out, group{parts: []part{p}, wt: wt})
		}
		row += p.rows
	}
	return out, nil
}

// fill writes the rows of parts into lin from row row0 a chunk of whole blocks at a time,
// whatever part they come from, reading them with read and writing them with write (as
// float32 values, or f16 bits as two bytes a value: per elements a value).
func fill[T float32 | byte](l *loader, lin *runtime.Linear, row0 int, parts []part, per int,
	read func(name string, row0 int, dst []T) error, write func(row0 int, v []T) error) error {
	k := lin.K
	chunk := max(runtime.Block, chunkBytes/(4*k)/runtime.Block*runtime.Block)
	return chunks(parts, chunk, per*k, make([]T, 2*chunk*per*k), read, func(at int, dst []T) error {
		if err := write(row0+at, dst); err != nil {
			return err
		}
		return l.wrote(int64(len(dst)/per) * l.srcBytesPer(parts))
	})
}

// fillQuant is fill for parts stored in quantized type wt: their blocks copied as they are.
func fillQuant(l *loader, lin *runtime.Linear, row0 int, parts []part, wt wgsl.WeightType) error {
	qs := l.src.(weights.QuantSource)
	rb := int(lin.BytesPerRow(wt))
	chunk := max(runtime.Block, chunkBytes/rb/runtime.Block*runtime.Block)
	return chunks(parts, chunk, rb, make([]byte, 2*chunk*rb), qs.RawRows, func(at int, dst []byte) error {
		if err := lin.WriteRowsQuant(row0+at, wt, dst); err != nil {
			return err
		}
		return l.wrote(int64(len(dst)))
	})
}

// chunks reads the rows of parts (width values or bytes each) chunk rows at a time, across the
// parts' boundaries, and hands each chunk to put with its first row. buf holds two chunks: a
// goroutine reads the next chunk into one half while put writes the other (reading a mapped
// file and writing the device take about as long, on different cores).
func chunks[T any](parts []part, chunk, width int, buf []T, read func(name string, row0 int, dst []T) error,
	put func(row int, dst []T) error) error {
	rows := 0
	for _, p := range parts {
		rows += p.rows
	}
	type filled struct {
		row int
		dst []T
		err error
	}
	full, free := make(chan filled, 1), make(chan []T, 2)
	free <- buf[: chunk*width : chunk*width]
	free <- buf[chunk*width : 2*chunk*width : 2*chunk*width]
	stop := make(chan struct{})
	defer close(stop)
	send := func(f filled) bool { // false: the caller has returned
		select {
		case full <- f:
			return true
		case <-stop:
			return false
		}
	}
	go func() {
		defer close(full)
		row, pi, pr := 0, 0, 0 // next row; the part it is in and its row there
		for row < rows {
			var b []T
			select {
			case b = <-free:
			case <-stop:
				return
			}
			n := min(chunk, rows-row)
			dst := b[:n*width]
			for got := 0; got < n; {
				p := parts[pi]
				m := min(n-got, p.rows-pr)
				if err := read(p.name, pr, dst[got*width:(got+m)*width]); err != nil {
					send(filled{err: fmt.Errorf("tensor %s: %w", p.name, err)})
					return
				}
				got, pr = got+m, pr+m
				if pr == p.rows {
					pi, pr = pi+1, 0
				}
			}
			if !send(filled{row: row, dst: dst}) {
				return
			}
			row += n
		}
	}()
	for f := range full {
		if f.err != nil {
			return f.err
		}
		if err := put(f.row, f.dst); err != nil {
			return err
		}
		free <- f.dst[:cap(f.dst)]
	}
	return nil
}

// normVector uploads norm weights as vector does, as what the norm multiplies by: Gemma's
// 1 + w (the kernels multiply by the stored value).
func (l *loader) normVector(label string, names ...string) (*webgpu.Buffer, error) {
	return l.vectorPlus(label, l.plusOne, names...)
}

// vector uploads the 1-D tensors names, concatenated, as f32.
func (l *loader) vector(label string, names ...string) (*webgpu.Buffer, error) {
	return l.vectorPlus(label, false, names...)
}

// vectorPlus is vector with 1 added to every value when plusOne.
func (l *loader) vectorPlus(label string, plusOne bool, names ...string) (*webgpu.Buffer, error) {
	var v []float32
	var bytes int64
	for _, name := range names {
		_, cols, b, err := l.src.Shape(name)
		if err != nil {
			return nil, err
		}
		part := make([]float32, cols)
		if err := l.src.Rows(name, 0, part); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		if plusOne {
			for i := range part {
				part[i]++
			}
		}
		v, bytes = append(v, part...), bytes+b
	}
	b, err := l.d.UploadF32(label, v)
	if err == nil {
		err = l.wrote(bytes)
	}
	return b, err
}

// srcBytesPer is the stored bytes per element of parts (their first tensor's).
func (l *loader) srcBytesPer(parts []part) int64 {
	rows, cols, b, err := l.src.Shape(parts[0].name)
	if err != nil || rows*cols == 0 {
		return 4
	}
	return b / int64(rows*cols)
}

// wrote counts bytes read for the progress, and flushes the queue's writes now and then.
func (l *loader) wrote(bytes int64) error {
	l.done += bytes
	if l.progress != nil {
		l.progress(l.done, l.total)
	}
	if l.pending += bytes; l.pending >= flushBytes {
		l.pending = 0
		return l.flush()
	}
	return nil
}

// flush submits the queue's pending writes and waits for them.
func (l *loader) flush() error {
	if err := l.d.NewEncoder().Submit(); err != nil {
		return err
	}
	return l.d.WaitIdle()
}

// upload streams the model's weights from src and allocates its KV cache.
func (m *Model) upload(src weights.TensorSource) error {
	c := m.Cfg
	l := &loader{d: m.d, src: src, weightType: m.Opts.Weights, progress: m.Opts.Progress, plusOne: c.NormPlusOne}
	for _, spec := range c.ExpectedTensors() {
		_, _, b, err := src.Shape(spec.Name)
		if err != nil {
			return err
		}
		l.total += b
	}
	var err error
	if m.embed, err = l.matrix("embed", c.Dim, part{weights.EmbedTensorName, c.Vocab}); err != nil {
		return err
	}
	m.lmHead = m.embed
	if !c.TieEmbed {
		if m.lmHead, err = l.matrix("lm_head", c.Dim, part{weights.LMHeadTensorName, c.Vocab}); err != nil {
			return err
		}
	}
	if m.norm, err = l.normVector("norm", weights.NormTensorName); err != nil {
		return err
	}
	qRows, kvRows := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	kvBytes := uint64(m.Opts.Pages*m.Opts.PageSize) * KVBytesPerToken(c.NKVHeads*c.HeadDim, m.Opts.KVType)
	for i := range c.NLayers {
		var dl deviceLayer
		name := func(s string) string { return fmt.Sprintf("layers.%d.%s", i, s) }
		t := func(suffix string) string { return weights.LayerTensorName(i, suffix) }
		steps := []func() error{
			func() (e error) { dl.attnNorm, e = l.normVector(name("attn_norm"), t(weights.AttnNormSuffix)); return },
			func() (e error) { dl.ffnNorm, e = l.normVector(name("ffn_norm"), t(c.FFNNormSuffix())); return },
			func() (e error) {
				if c.PostNorms {
					if dl.postAttn, e = l.normVector(name("post_attn_norm"), t(weights.PostAttnNormSuffix)); e == nil {
						dl.postFFN, e = l.normVector(name("post_ffn_norm"), t(weights.PostFFNNormSuffix))
					}
				}
				return
			},
			func() (e error) {
				dl.qkv, e = l.matrix(name("qkv"), c.Dim, part{t(weights.WqSuffix), qRows}, part{t(weights.WkSuffix), kvRows}, part{t(weights.WvSuffix), kvRows})
				return
			},
			func() (e error) {
				if c.AttnBias {
					dl.qkvBias, e = l.vector(name("qkv_bias"), t(weights.BqSuffix), t(weights.BkSuffix), t(weights.BvSuffix))
				}
				return
			},
			func() (e error) {
				if c.QKNorm {
					dl.qkNorm, e = l.normVector(name("qk_norm"), t(weights.QNormSuffix), t(weights.KNormSuffix))
				}
				return
			},
			func() (e error) { dl.wo, e = l.matrix(name("wo"), qRows, part{t(weights.WoSuffix), c.Dim}); return },
			func() (e error) {
				dl.w13, e = l.matrix(name("w13"), c.Dim, part{t(weights.GateSuffix), c.HiddenDim}, part{t(weights.UpSuffix), c.HiddenDim})
				return
			},
			func() (e error) {
				dl.w2, e = l.matrix(name("w2"), c.HiddenDim, part{t(weights.DownSuffix), c.Dim})
				return
			},
			func() (e error) { dl.kc, e = m.d.NewStorage(name("k_cache"), kvBytes); return },
			func() (e error) { dl.vc, e = m.d.NewStorage(name("v_cache"), kvBytes); return },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				m.layers = append(m.layers, dl) // so that Release frees what the layer has
				return err
			}
		}
		m.layers = append(m.layers, dl)
	}
	return l.flush()
}

// KVBytesPerToken is the bytes one token takes in one layer's K (or V) cache of kvWidth values
// (n_kv x head_dim) of type t.
func KVBytesPerToken(kvWidth int, t wgsl.WeightType) uint64 {
	if t == wgsl.F16 {
		return uint64(2 * kvWidth)
	}
	return uint64(4 * kvWidth)
}
