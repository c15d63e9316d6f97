package distill

import (
	"math"
	"sync"
)

// Causal self-attention over a batch of whole sequences, with EAGLE-3's training-time-test
// "chain": rows of all sequences are stacked, sequence s owning rows off[s]..off[s+1]-1 (row
// t of a sequence at position t), every buffer [R, heads, hd] with one key/value head per
// query head. At TTT step c, the query of row t attends to the step-0 keys of rows 0..t of
// its sequence (causal) and to the chain keys of its own row from steps 1..c (chainK[j-1]
// is step j's), which is what the head sees at inference: the cache of the verified rows,
// then its own earlier depths. Plain causal attention is the case of an empty chain.

// attnCache is what attnForward keeps for attnBackward.
type attnCache struct {
	off    []int     // sequence row offsets, len = sequences + 1
	heads  int       // heads
	hd     int       // head size
	p      []float32 // per (sequence, head) the [T, T] probabilities over step-0 keys
	pOff   []int     // offset of (s, h)'s block in p: pOff[s] + h*T*T
	pc     []float32 // [R, heads, chain] probabilities over the chain keys
	chain  int
	q      []float32 // the queries (rotated), [R, heads, hd]
	k0, v0 []float32
	ck, cv [][]float32
}

// attnWork is one worker's scratch.
type attnWork struct{ qh, kh, vh, oh, s []float32 }

func (w *attnWork) grow(T, hd int) {
	if cap(w.qh) < T*hd {
		w.qh, w.kh, w.vh, w.oh = make([]float32, T*hd), make([]float32, T*hd), make([]float32, T*hd), make([]float32, T*hd)
	}
	if cap(w.s) < T*T {
		w.s = make([]float32, T*T)
	}
	w.qh, w.kh, w.vh, w.oh, w.s = w.qh[:T*hd], w.kh[:T*hd], w.vh[:T*hd], w.oh[:T*hd], w.s[:T*T]
}

// gatherHead copies head h of rows lo..lo+T-1 of x [R, heads, hd] into dst [T, hd].
func gatherHead(dst, x []float32, lo, T, heads, h, hd int) {
	for t := range T {
		copy(dst[t*hd:(t+1)*hd], x[((lo+t)*heads+h)*hd:])
	}
}

// scatterHead adds src [T, hd] into head h of rows lo..lo+T-1 of x.
func scatterHead(x, src []float32, lo, T, heads, h, hd int) {
	for t := range T {
		row := x[((lo+t)*heads+h)*hd : ((lo+t)*heads+h+1)*hd]
		for d, v := range src[t*hd : (t+1)*hd] {
			row[d] += v
		}
	}
}

// forEachSeqHead runs body(worker, s, h) over every (sequence, head) on two goroutines.
func forEachSeqHead(nseq, heads int, body func(w *attnWork, s, h int)) {
	n := nseq * heads
	var mu sync.Mutex
	next := 0
	parallelFor(n, 1, func(lo, hi int) {
		w := &attnWork{}
		for {
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			if i >= n {
				return
			}
			body(w, i/heads, i%heads)
		}
	})
}

// attnForward writes out [R, heads, hd] = attention of q over k0/v0 (causal) and the chain
// ck/cv (same row), all [R, heads, hd], and returns the cache for attnBackward.
func attnForward(out, q, k0, v0 []float32, ck, cv [][]float32, off []int, heads, hd int) *attnCache {
	R := off[len(off)-1]
	c := &attnCache{off: off, heads: heads, hd: hd, chain: len(ck), q: q, k0: k0, v0: v0, ck: ck, cv: cv}
	c.pOff = make([]int, len(off))
	for s := 0; s+1 < len(off); s++ {
		T := off[s+1] - off[s]
		c.pOff[s+1] = c.pOff[s] + heads*T*T
	}
	c.p = make([]float32, c.pOff[len(off)-1])
	c.pc = make([]float32, R*heads*c.chain)
	clear(out[:R*heads*hd])
	scale := float32(1 / math.Sqrt(float64(hd)))
	nc := c.chain
	forEachSeqHead(len(off)-1, heads, func(w *attnWork, s, h int) {
		lo, T := off[s], off[s+1]-off[s]
		w.grow(T, hd)
		gatherHead(w.qh, q, lo, T, heads, h, hd)
		gatherHead(w.kh, k0, lo, T, heads, h, hd)
		gatherHead(w.vh, v0, lo, T, heads, h, hd)
		P := c.p[c.pOff[s]+h*T*T : c.pOff[s]+(h+1)*T*T]
		gemmSerial(false, true, T, T, hd, w.qh, w.kh, P, false)
		var cs [16]float32
		for t := range T {
			row := P[t*T : (t+1)*T]
			qt := w.qh[t*hd : (t+1)*hd]
			mx := float32(math.Inf(-1))
			for j := 0; j <= t; j++ {
				row[j] *= scale
				mx = max(mx, row[j])
			}
			for j := range nc {
				cs[j] = dot(qt, ck[j][((lo+t)*heads+h)*hd:((lo+t)*heads+h+1)*hd]) * scale
				mx = max(mx, cs[j])
			}
			var sum float32
			for j := 0; j <= t; j++ {
				row[j] = expf(row[j] - mx)
				sum += row[j]
			}
			for j := range nc {
				cs[j] = expf(cs[j] - mx)
				sum += cs[j]
			}
			inv := 1 / sum
			for j := 0; j <= t; j++ {
				row[j] *= inv
			}
			clear(row[t+1:])
			pc := c.pc[((lo+t)*heads+h)*nc : ((lo+t)*heads+h+1)*nc]
			for j := range nc {
				pc[j] = cs[j] * inv
			}
		}
		gemmSerial(false, false, T, hd, T, P, w.vh, w.oh, false)
		for t := range T {
			o := w.oh[t*hd : (t+1)*hd]
			pc := c.pc[((lo+t)*heads+h)*nc : ((lo+t)*heads+h+1)*nc]
			for j := range nc {
				axpy(pc[j], cv[j][((lo+t)*heads+h)*hd:((lo+t)*heads+h+1)*hd], o)
			}
		}
		scatterHead(out, w.oh, lo, T, heads, h, hd)
	})
	return c
}

// attnBackward adds the gradients of dout [R, heads, hd] into dq, dk0, dv0 and the chain's
// dck/dcv (each [R, heads, hd]; dck[j] may be nil when the chain's keys need none).
func attnBackward(c *attnCache, dout, dq, dk0, dv0 []float32, dck, dcv [][]float32) {
	heads, hd, nc, off := c.heads, c.hd, c.chain, c.off
	scale := float32(1 / math.Sqrt(float64(hd)))
	forEachSeqHead(len(off)-1, heads, func(w *attnWork, s, h int) {
		lo, T := off[s], off[s+1]-off[s]
		w.grow(T, hd)
		P := c.p[c.pOff[s]+h*T*T : c.pOff[s]+(h+1)*T*T]
		do := w.oh
		gatherHead(do, dout, lo, T, heads, h, hd)
		gatherHead(w.vh, c.v0, lo, T, heads, h, hd)
		dP := w.s
		gemmSerial(false, true, T, T, hd, do, w.vh, dP, false) // dP = dO V^T
		// dV0 = P^T dO
		gemmSerial(true, false, T, hd, T, P, do, w.vh, false)
		scatterHead(dv0, w.vh, lo, T, heads, h, hd)
		var dpc [16]float32
		for t := range T {
			idx := ((lo+t)*heads + h) * hd
			dOt := do[t*hd : (t+1)*hd]
			pc := c.pc[((lo+t)*heads+h)*nc : ((lo+t)*heads+h+1)*nc]
			row, prow := dP[t*T:(t+1)*T], P[t*T:(t+1)*T]
			var rd float32
			for j := 0; j <= t; j++ {
				rd += prow[j] * row[j]
			}
			for j := range nc {
				dpc[j] = dot(dOt, c.cv[j][idx:idx+hd])
				rd += pc[j] * dpc[j]
				axpy(pc[j], dOt, dcv[j][idx:idx+hd])
			}
			for j := 0; j <= t; j++ {
				row[j] = prow[j] * (row[j] - rd) * scale
			}
			clear(row[t+1:])
			for j := range nc {
				dpc[j] = pc[j] * (dpc[j] - rd) * scale
			}
			for j := range nc {
				if dck[j] != nil {
					axpy(dpc[j], c.q[idx:idx+hd], dck[j][idx:idx+hd])
				}
				axpy(dpc[j], c.ck[j][idx:idx+hd], dq[idx:idx+hd])
			}
		}
		gatherHead(w.qh, c.q, lo, T, heads, h, hd)
		gatherHead(w.kh, c.k0, lo, T, heads, h, hd)
		gemmSerial(false, false, T, hd, T, dP, w.kh, w.oh, false) // dQ = dS K
		scatterHead(dq, w.oh, lo, T, heads, h, hd)
		gemmSerial(true, false, T, hd, T, dP, w.qh, w.oh, false) // dK = dS^T Q
		scatterHead(dk0, w.oh, lo, T, heads, h, hd)
	})
}
