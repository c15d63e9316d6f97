package distill

import (
	"runtime"
	"sync"
)

// The matrix multiply every forward and backward pass goes through: a BLIS-style blocked
// float32 GEMM. Operands are packed into panels of mr rows (A) and nr columns (B) so that the
// micro-kernel (kernel6x16: AVX2/FMA assembly on amd64 when the CPU has it, plain Go
// otherwise) streams both from cache; a kc-deep slice of B stays in L2 while every mr-row
// panel of A runs over it. The work is split over the cores along the larger of M and N.

const (
	mr = 6   // rows of a micro-tile
	nr = 16  // columns of a micro-tile
	kc = 320 // most depth of one packed slice (kcFor balances the slices)
	nc = 768 // columns of B packed at once (kc*nc*4 = 960 KiB)
)

// Gemm computes C = op(A) op(B) (+ C when acc), with C [M, N] row-major (ldc = N), op(A)
// [M, K] and op(B) [K, N]. A is stored [M, K], or [K, M] when ta; B is stored [K, N], or
// [N, K] when tb. The three products of a linear layer y = x W^T, with x [M, K], W [N, K]
// (the [out, in] layout) and gradients dy [M, N]:
//
//	forward    y  = x W^T       Gemm(false, true,  M, N, K, x, W, y, false)
//	input      dx = dy W        Gemm(false, false, M, K, N, dy, W, dx, acc)
//	weight     dW += dy^T x     Gemm(true,  false, N, K, M, dy, x, dW, true)
func Gemm(ta, tb bool, M, N, K int, a, b, c []float32, acc bool) {
	gemm(ta, M, N, K, a, bSource{tb: tb, b: b}, c, acc, true)
}

// Packed is a weight matrix packed once into Gemm's panel layout, for a matrix that many
// products read unchanged (the frozen target's weights): op(B) [K, N] cut into kc-deep
// slices, each slice a run of [kb][nr] panels covering all N columns (zero-padded).
type Packed struct {
	N, K int
	npad int // N rounded up to nr
	data []float32
}

// PackWeight packs a weight w [N, K] (the [out, in] layout) for GemmPacked, which then
// computes x w^T as Gemm(false, true, ...) would.
func PackWeight(w []float32, N, K int) *Packed {
	p := &Packed{N: N, K: K, npad: (N + nr - 1) / nr * nr}
	p.data = make([]float32, p.npad*K)
	kcb := kcFor(K)
	for pc := 0; pc < K; pc += kcb {
		kb := min(kcb, K-pc)
		packB(true, N, K, w, pc, kb, 0, N, p.data[pc*p.npad:])
	}
	return p
}

// GemmPacked is Gemm(false, true, M, p.N, p.K, a, w, c, acc) for the w that p packs.
func GemmPacked(M int, a []float32, p *Packed, c []float32, acc bool) {
	gemm(false, M, p.N, p.K, a, bSource{packed: p}, c, acc, true)
}

// bSource is the B operand: a matrix to pack as the product goes, or one packed already.
type bSource struct {
	tb     bool
	b      []float32
	packed *Packed
}

// gemm splits the product over the cores (when parallel and it is worth it).
func gemm(ta bool, M, N, K int, a []float32, b bSource, c []float32, acc, parallel bool) {
	if M == 0 || N == 0 {
		return
	}
	if K == 0 {
		if !acc {
			clear(c[:M*N])
		}
		return
	}
	workers := runtime.GOMAXPROCS(0)
	if flops := M * N * K; flops < 1<<17 || !parallel {
		workers = 1
	}
	if workers == 1 {
		gemmRange(ta, M, N, K, a, b, c, acc, 0, M, 0, N)
		return
	}
	var wg sync.WaitGroup
	if M >= N {
		step := (M + workers - 1) / workers
		step = (step + mr - 1) / mr * mr
		for lo := 0; lo < M; lo += step {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				gemmRange(ta, M, N, K, a, b, c, acc, lo, hi, 0, N)
			}(lo, min(lo+step, M))
		}
	} else {
		step := (N + workers - 1) / workers
		step = (step + nr - 1) / nr * nr
		for lo := 0; lo < N; lo += step {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				gemmRange(ta, M, N, K, a, b, c, acc, 0, M, lo, hi)
			}(lo, min(lo+step, N))
		}
	}
	wg.Wait()
}

// kcFor is the depth of the packed slices for a product of depth K: K cut into equal
// slices of at most kc (a short last slice would cost a whole pass of tile updates).
func kcFor(K int) int {
	n := (K + kc - 1) / kc
	return (K + n - 1) / n
}

// packBufs are one worker's packing buffers, reused through a pool.
type packBufs struct {
	a, b []float32
	tile [mr * nr]float32
}

var packPool = sync.Pool{New: func() any {
	return &packBufs{a: make([]float32, 16*mr*kc), b: make([]float32, kc*nc)}
}}

// gemmRange computes the block rows m0..m1, columns n0..n1 of C.
func gemmRange(ta bool, M, N, K int, a []float32, b bSource, c []float32, acc bool, m0, m1, n0, n1 int) {
	pb := packPool.Get().(*packBufs)
	defer packPool.Put(pb)
	const mc = 16 * mr // rows of A packed at once
	kcb := kcFor(K)
	for jc := n0; jc < n1; jc += nc {
		nb := min(nc, n1-jc)
		for pc := 0; pc < K; pc += kcb {
			kb := min(kcb, K-pc)
			bpan := pb.b
			if b.packed != nil {
				bpan = b.packed.data[pc*b.packed.npad+jc*kb:]
			} else {
				packB(b.tb, N, K, b.b, pc, kb, jc, nb, pb.b)
			}
			first := pc == 0 && !acc
			for ic := m0; ic < m1; ic += mc {
				mb := min(mc, m1-ic)
				packA(ta, M, K, a, ic, mb, pc, kb, pb.a)
				for jr := 0; jr < nb; jr += nr {
					bp := bpan[jr*kb : (jr+nr)*kb]
					cols := min(nr, nb-jr)
					for ir := 0; ir < mb; ir += mr {
						ap := pb.a[ir*kb : (ir+mr)*kb]
						rows := min(mr, mb-ir)
						if rows == mr && cols == nr && kernelFull(kb, ap, bp, c[(ic+ir)*N+jc+jr:], N, !first) {
							continue
						}
						kernel6x16(kb, ap, bp, pb.tile[:])
						for i := range rows {
							crow := c[(ic+ir+i)*N+jc+jr : (ic+ir+i)*N+jc+jr+cols]
							t := pb.tile[i*nr : i*nr+cols]
							if first {
								copy(crow, t)
							} else {
								for j, v := range t {
									crow[j] += v
								}
							}
						}
					}
				}
			}
		}
	}
}

// packA copies op(A)[i0:i0+mb, p0:p0+kb] into panels of mr rows, each stored [kb][mr]
// (rows past mb zero).
func packA(ta bool, M, K int, a []float32, i0, mb, p0, kb int, dst []float32) {
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kb : (ir+mr)*kb]
		rows := min(mr, mb-ir)
		if ta { // A stored [K, M]: op(A)[i, p] = a[p*M + i]
			for p := range kb {
				src := a[(p0+p)*M+i0+ir:]
				d := panel[p*mr : p*mr+mr : p*mr+mr]
				if rows == mr {
					src = src[:mr:mr]
					d[0], d[1], d[2], d[3], d[4], d[5] = src[0], src[1], src[2], src[3], src[4], src[5]
					continue
				}
				copy(d[:rows], src[:rows])
				clear(d[rows:])
			}
			continue
		}
		if rows == mr { // six source rows side by side, the panel written in order
			r0 := a[(i0+ir)*K+p0 : (i0+ir)*K+p0+kb]
			r1 := a[(i0+ir+1)*K+p0 : (i0+ir+1)*K+p0+kb]
			r2 := a[(i0+ir+2)*K+p0 : (i0+ir+2)*K+p0+kb]
			r3 := a[(i0+ir+3)*K+p0 : (i0+ir+3)*K+p0+kb]
			r4 := a[(i0+ir+4)*K+p0 : (i0+ir+4)*K+p0+kb]
			r5 := a[(i0+ir+5)*K+p0 : (i0+ir+5)*K+p0+kb]
			for p := range kb {
				d := panel[p*mr : p*mr+mr : p*mr+mr]
				d[0], d[1], d[2], d[3], d[4], d[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
			}
			continue
		}
		for i := range rows {
			src := a[(i0+ir+i)*K+p0 : (i0+ir+i)*K+p0+kb]
			for p, v := range src {
				panel[p*mr+i] = v
			}
		}
		for i := rows; i < mr; i++ {
			for p := range kb {
				panel[p*mr+i] = 0
			}
		}
	}
}

// packB copies op(B)[p0:p0+kb, j0:j0+nb] into panels of nr columns, each stored [kb][nr]
// (columns past nb zero).
func packB(tb bool, N, K int, b []float32, p0, kb, j0, nb int, dst []float32) {
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kb : (jr+nr)*kb]
		cols := min(nr, nb-jr)
		if !tb { // B stored [K, N]
			for p := range kb {
				src := b[(p0+p)*N+j0+jr:]
				d := panel[p*nr : p*nr+nr]
				copy(d[:cols], src[:cols])
				clear(d[cols:])
			}
			continue
		}
		// B stored [N, K]: op(B)[p, j] = b[j*K + p]; walk the panel's rows in order,
		// reading the nr source rows side by side.
		for p := range kb {
			d := panel[p*nr : p*nr+nr]
			for j := range cols {
				d[j] = b[(j0+jr+j)*K+p0+p]
			}
			clear(d[cols:])
		}
	}
}

// kernel6x16Go is the portable micro-kernel: tile [mr][nr] = sum_p a[p][:] x b[p][:].
func kernel6x16Go(k int, a, b, tile []float32) {
	var acc [mr][nr]float32
	for p := range k {
		bp := b[p*nr : p*nr+nr : p*nr+nr]
		ap := a[p*mr : p*mr+mr : p*mr+mr]
		for i := range mr {
			ai := ap[i]
			r := &acc[i]
			for j := range nr {
				r[j] += ai * bp[j]
			}
		}
	}
	for i := range mr {
		copy(tile[i*nr:], acc[i][:])
	}
}

// gemmSerial is Gemm on the calling goroutine (for callers that parallelise themselves).
func gemmSerial(ta, tb bool, M, N, K int, a, b, c []float32, acc bool) {
	gemm(ta, M, N, K, a, bSource{tb: tb, b: b}, c, acc, false)
}
