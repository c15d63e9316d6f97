package runtime

import (
	"encoding/binary"
	"fmt"

	"github.com/wspec/wspec/weights/gguf"
	"github.com/wspec/wspec/wgsl"
)

// QuantType is the weight type that keeps GGUF tensor type t on the device, if there is one.
func QuantType(t gguf.TensorType) (wgsl.WeightType, bool) {
	for _, wt := range wgsl.QuantizedTypes() {
		if wt.GGML() == uint32(t) {
			return wt, true
		}
	}
	return 0, false
}

// quantRowBytes is the bytes of a row of k values of quantized type wt, as GGUF stores it.
func quantRowBytes(k int, wt wgsl.WeightType) (int, error) {
	n, err := gguf.TensorType(wt.GGML()).RowBytes(uint64(k))
	return int(n), err
}

// checkQuantK checks that a row of k values is whole blocks of wt (always, for f32 and f16).
func checkQuantK(k int, wt wgsl.WeightType) error {
	if !wt.Quantized() {
		return nil
	}
	_, err := quantRowBytes(k, wt)
	return err
}

// devicePad is the zero bytes the device layout adds after each GGUF block of type wt: 14 for
// Q6_K, whose 210-byte blocks would put every other block at a 2-byte offset; at 224 bytes
// every block is whole vec4s, as 256 values of every other type are (wgsl/quant.wgsl's
// qchunk), so the kernels load a block as vec4s and every field is at a whole word, for 7%
// more memory on Q6_K tensors.
func devicePad(wt wgsl.WeightType) int {
	if wt == wgsl.Q6_K {
		return 14
	}
	return 0
}

// quantRowWords is the u32 words a row of k values of quantized type wt takes on the device:
// its blocks (each padded by devicePad) in chunks of 256 values, the last chunk completed
// with zero blocks (which decode to 0), so that the kernels read whole chunks of vec4s
// (wgsl/quant.wgsl's qrow_vec4s).
func quantRowWords(k int, wt wgsl.WeightType) int {
	t := gguf.TensorType(wt.GGML())
	bs := t.BlockSize()
	fileBytes, _ := t.RowBytes(uint64(bs))
	blockBytes := int(fileBytes) + devicePad(wt)
	chunks := (k + chunkValues - 1) / chunkValues
	return chunks * (chunkValues / bs) * blockBytes / 4
}

// chunkValues is the values of a chunk: what the quantized kernels load at once.
const chunkValues = 256

// WriteRowsQuant writes rows row0 .. of quantized type wt from raw: whole rows of GGUF blocks,
// back to back, as a GGUF file holds them. The rows' parts must be of type wt; row0 and the
// row count are whole blocks of rows as for WriteRows.
func (l *Linear) WriteRowsQuant(row0 int, wt wgsl.WeightType, raw []byte) error {
	if !wt.Quantized() {
		return fmt.Errorf("runtime: WriteRowsQuant of %v rows", wt)
	}
	rb, err := quantRowBytes(l.K, wt)
	if err != nil {
		return err
	}
	if len(raw)%rb != 0 {
		return fmt.Errorf("runtime: %d bytes of %v are not whole rows of %d values (%d bytes)", len(raw), wt, l.K, rb)
	}
	return l.writeRows(row0, len(raw)/rb*l.K, wt, func(lo, hi int, _ wgsl.WeightType) []byte {
		return quantLayout(raw[(lo-row0)*rb:(hi-row0)*rb], hi-lo, l.K, wt)
	})
}

// QuantLayout lays out rows of quantized type wt (raw: whole rows of GGUF blocks, back to back)
// as a Linear of that type holds them on the device.
func QuantLayout(raw []byte, rows, k int, wt wgsl.WeightType) ([]byte, error) {
	rb, err := quantRowBytes(k, wt)
	if err != nil || !wt.Quantized() {
		return nil, fmt.Errorf("runtime: %d values of %v: %w", k, wt, err)
	}
	if len(raw) != rows*rb {
		return nil, fmt.Errorf("runtime: %d bytes for %d rows of %d values of %v (%d bytes a row)", len(raw), rows, k, wt, rb)
	}
	return quantLayout(raw, rows, k, wt), nil
}

// quantLayout is QuantLayout with the sizes checked.
func quantLayout(raw []byte, rows, k int, wt wgsl.WeightType) []byte {
	rb, _ := quantRowBytes(k, wt)
	kw := quantRowWords(k, wt)
	pad := devicePad(wt)
	blockBytes := rb / (k / gguf.TensorType(wt.GGML()).BlockSize())
	words := make([]uint32, rows*kw)
	dev := make([]byte, 4*kw) // one row as the device holds it
	for r := range rows {
		src := raw[r*rb : (r+1)*rb]
		clear(dev)
		for o, d := 0, 0; o < rb; o, d = o+blockBytes, d+blockBytes+pad {
			copy(dev[d:], src[o:o+blockBytes])
		}
		row := words[r*kw : (r+1)*kw]
		for j := range row {
			row[j] = binary.LittleEndian.Uint32(dev[4*j:])
		}
	}
	b := blocked(words, rows, kw, GroupK(wt))
	out := make([]byte, 4*len(b))
	for i, v := range b {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	return out
}

// QuantRowVec4s is the vec4<u32>s a row of k values of quantized type wt takes on the device
// (embed_q's KG: its groups a row).
func QuantRowVec4s(k int, wt wgsl.WeightType) int { return quantRowWords(k, wt) / 4 }

// BytesPerRow is the bytes a row of the matrix takes as stored in type wt (a GGUF row for a
// quantized type; 4 or 2 a value for f32 and f16).
func (l *Linear) BytesPerRow(wt wgsl.WeightType) int64 {
	switch {
	case wt.Quantized():
		b, _ := quantRowBytes(l.K, wt)
		return int64(b)
	case wt == wgsl.F16:
		return 2 * int64(l.K)
	}
	return 4 * int64(l.K)
}

// Types lists the weight types of the matrix's parts, in row order, one per run of rows.
func (l *Linear) Types() []wgsl.WeightType {
	var out []wgsl.WeightType
	for i, p := range l.parts {
		if i == 0 || p.wt != l.parts[i-1].wt {
			out = append(out, p.wt)
		}
	}
	return out
}
