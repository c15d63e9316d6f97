package quant

import "math"

// The 256-value "K" types: a super-block of 8 sub-blocks of 32 (Q4_K, Q5_K: a 6-bit scale and
// a 6-bit min each, scaled by the block's f16 d and dmin) or 16 sub-blocks of 16 (Q6_K: an int8
// scale each, scaled by d).

const groupMaxEps = 1e-15

// scaleMin is sub-block j's 6-bit scale and min of a Q4_K/Q5_K block's 12 scale bytes (ggml's
// get_scale_min_k4): sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins),
// sub-blocks 4-7 in the nibbles of bytes 8-11 with their top 2 bits in the spare bits of 0-7.
func scaleMin(j int, q []byte) (uint8, uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// decodeK45 decodes a Q4_K (qh nil) or Q5_K block: d at 0, dmin at 2, scales at 4..16.
func decodeK45(b, qh, qs []byte, y []float32) {
	d, dmin := f16(b), f16(b[2:])
	for p := range 4 { // pairs of sub-blocks share 32 bytes of qs: low nibbles, then high
		for h := range 2 {
			sc, m := scaleMin(2*p+h, b[4:16])
			d1, m1 := d*float32(sc), dmin*float32(m)
			for l := range 32 {
				q := int32(qs[32*p+l]>>(4*h)) & 0xf
				if qh != nil && qh[l]>>(2*p+h)&1 != 0 {
					q += 16
				}
				y[64*p+32*h+l] = d1*float32(q) - m1
			}
		}
	}
}

func decodeQ4_K(b []byte, y []float32) { decodeK45(b, nil, b[16:144], y) }
func decodeQ5_K(b []byte, y []float32) { decodeK45(b, b[16:48], b[48:176], y) }

func decodeQ6_K(b []byte, y []float32) {
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	d := f16(b[208:])
	for n := range 2 { // halves of 128 values: 64 bytes of ql, 32 of qh, 8 scales
		l0, h0, s0 := ql[64*n:], qh[32*n:], sc[8*n:]
		for l := range 32 {
			is := l / 16
			q1 := int32(l0[l]&0xf|(h0[l]>>0&3)<<4) - 32
			q2 := int32(l0[l+32]&0xf|(h0[l]>>2&3)<<4) - 32
			q3 := int32(l0[l]>>4|(h0[l]>>4&3)<<4) - 32
			q4 := int32(l0[l+32]>>4|(h0[l]>>6&3)<<4) - 32
			y[128*n+l] = d * float32(int8(s0[is])) * float32(q1)
			y[128*n+l+32] = d * float32(int8(s0[is+2])) * float32(q2)
			y[128*n+l+64] = d * float32(int8(s0[is+4])) * float32(q3)
			y[128*n+l+96] = d * float32(int8(s0[is+6])) * float32(q4)
		}
	}
}

// encodeK45 quantizes a Q4_K (nmax 15) or Q5_K (31) block as quantize_row_q{4,5}_K_ref does.
func encodeK45(x []float32, b []byte, nmax int, rmin float32, nstep int) {
	var scales, mins [8]float32
	var L [256]uint8
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += v * v
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		var w [32]float32
		for l, v := range xs {
			w[l] = avX + abs(v)
		}
		scales[j], mins[j] = makeQKX2(xs, w[:], L[32*j:32*j+32], nmax, rmin, 0.1, nstep)
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sb := b[4:16]
	clear(sb)
	for j := range 8 {
		ls := uint8(min(63, uint8(nearestInt(invScale*scales[j]))))
		lm := uint8(min(63, uint8(nearestInt(invMin*mins[j]))))
		if j < 4 {
			sb[j], sb[j+4] = ls, lm
		} else {
			sb[j+4] = ls&0xf | (lm&0xf)<<4
			sb[j-4] |= (ls >> 4) << 6
			sb[j] |= (lm >> 4) << 6
		}
	}
	putF16(b, maxScale/63)
	putF16(b[2:], maxMin/63)
	d, dmin := f16(b), f16(b[2:])
	for j := range 8 {
		sc, m := scaleMin(j, sb)
		dj := d * float32(sc)
		if dj == 0 {
			continue
		}
		dm := dmin * float32(m)
		for i := range 32 {
			L[32*j+i] = uint8(max(0, min(nmax, nearestInt((x[32*j+i]+dm)/dj))))
		}
	}
	if nmax == 15 {
		qs := b[16:144]
		for p := range 4 {
			for l := range 32 {
				qs[32*p+l] = L[64*p+l] | L[64*p+l+32]<<4
			}
		}
		return
	}
	qh, qs := b[16:48], b[48:176]
	clear(qh)
	for p := range 4 {
		for l := range 32 {
			l1, l2 := L[64*p+l], L[64*p+l+32]
			if l1 > 15 {
				l1 -= 16
				qh[l] |= 1 << (2 * p)
			}
			if l2 > 15 {
				l2 -= 16
				qh[l] |= 2 << (2 * p)
			}
			qs[32*p+l] = l1 | l2<<4
		}
	}
}

func encodeQ4_K(x []float32, b []byte) { encodeK45(x, b, 15, -1, 20) }
func encodeQ5_K(x []float32, b []byte) { encodeK45(x, b, 31, -0.5, 15) }

func encodeQ6_K(x []float32, b []byte) {
	var L [256]int8
	var scales [16]float32
	var maxScale, maxAbs float32
	for ib := range 16 {
		s := makeQX(x[16*ib:16*ib+16], L[16*ib:16*ib+16], 32)
		scales[ib] = s
		if abs(s) > maxAbs {
			maxAbs, maxScale = abs(s), s
		}
	}
	clear(b[:210])
	if maxAbs < groupMaxEps {
		return
	}
	iscale := -128 / maxScale
	putF16(b[208:], 1/iscale)
	sc := b[192:208]
	for ib := range 16 {
		sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
	}
	d := f16(b[208:])
	for j := range 16 {
		dj := d * float32(int8(sc[j]))
		if dj == 0 {
			continue
		}
		for i := range 16 {
			L[16*j+i] = int8(max(-32, min(31, nearestInt(x[16*j+i]/dj))) + 32)
		}
	}
	ql, qh := b[0:128], b[128:192]
	for n := range 2 {
		j := 128 * n
		for l := range 32 {
			q1, q2, q3, q4 := uint8(L[j+l]), uint8(L[j+l+32]), uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[64*n+l] = q1&0xf | (q3&0xf)<<4
			ql[64*n+l+32] = q2&0xf | (q4&0xf)<<4
			qh[32*n+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}

// makeQKX2 is ggml's make_qkx2_quants: the scale and min (returned as -min) of x as
// scale * L + min with L in 0..nmax, searched over nstep + 1 candidate scales for the least
// weighted squared error.
func makeQKX2(x, w []float32, L []uint8, nmax int, rmin, rdelta float32, nstep int) (float32, float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW, sumX := w[0], w[0]*x[0]
	for i := 1; i < n; i++ {
		lo, hi = min(lo, x[i]), max(hi, x[i])
		sumW += w[i]
		sumX += w[i] * x[i]
	}
	lo = min(lo, 0)
	if hi == lo {
		clear(L[:n])
		return 0, -lo
	}
	iscale := float32(nmax) / (hi - lo)
	scale := 1 / iscale
	var best float32
	for i := range n {
		L[i] = uint8(max(0, min(nmax, nearestInt(iscale*(x[i]-lo)))))
		diff := scale*float32(L[i]) + lo - x[i]
		best += w[i] * (diff * diff)
	}
	var aux [32]uint8
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + rdelta*float32(is) + float32(nmax)) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := max(0, min(nmax, nearestInt(iscale*(x[i]-lo))))
			aux[i] = uint8(l)
			fl := float32(l)
			sumL += w[i] * fl
			sumL2 += w[i] * fl * fl
			sumXL += w[i] * fl * x[i]
		}
		D := sumW*sumL2 - sumL*sumL
		if D <= 0 {
			continue
		}
		thisScale := (sumW*sumXL - sumX*sumL) / D
		thisMin := (sumL2*sumX - sumL*sumXL) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var cur float32
		for i := range n {
			diff := thisScale*float32(aux[i]) + thisMin - x[i]
			cur += w[i] * (diff * diff)
		}
		if cur < best {
			copy(L[:n], aux[:n])
			best, scale, lo = cur, thisScale, thisMin
		}
	}
	return scale, -lo
}

// makeQX is ggml's make_qx_quants with rmse_type 1 (weights x²) and no importance matrix: the
// scale of x as scale * (L - nmax), L in 0..2 nmax - 1, searched over 19 candidate scales.
func makeQX(x []float32, L []int8, nmax int) float32 {
	mx := signedMax(x)
	if abs(mx) < groupMaxEps {
		clear(L)
		return 0
	}
	quant := func(iscale float32) (sumLX, sumL2 float32) {
		for _, v := range x {
			l := max(-nmax, min(nmax-1, nearestInt(iscale*v)))
			w := v * v
			sumLX += w * v * float32(l)
			sumL2 += w * float32(l) * float32(l)
		}
		return
	}
	set := func(iscale float32) {
		for i, v := range x {
			L[i] = int8(nmax + max(-nmax, min(nmax-1, nearestInt(iscale*v))))
		}
	}
	iscale := float32(-nmax) / mx
	set(iscale)
	sumLX, sumL2 := quant(iscale)
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + 0.1*float32(is)) / mx
		sumLX, sumL2 = quant(iscale)
		if sumL2 > 0 && sumLX*sumLX > best*sumL2 {
			set(iscale)
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}
