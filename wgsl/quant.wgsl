// quant.wgsl: ggml's block-quantized weights (QTYPE, from the prelude: Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q4_K, Q5_K or Q6_K, numbered as in GGUF), decoded 32 values at a time; weights/quant is
// the reference. A row of k values is k / qvals() blocks of qbytes() bytes as GGUF stores them
// (Q6_K's with 2 bytes of padding after each, see runtime.devicePad), read as u32 words
// (zero-padded to whole vec4s) in the blocked layout of mat_io.wgsl: word j of row n is
// w[((n / 8) * k4 + j / 4) * 8 + n % 8][j % 4], k4 = qrow_vec4s(k), so the 8 rows of a block
// are read together. The including kernel declares w: array<vec4<u32>>. Every field of
// every type starts at an even byte offset, so a u32 at any field spans at most two words.

// qvals is the values per block.
fn qvals() -> u32 {
  if (QTYPE >= 12u) { return 256u; }
  return 32u;
}

// qbytes is the bytes per block.
fn qbytes() -> u32 {
  switch QTYPE {
    case 8u: { return 34u; }
    case 2u: { return 18u; }
    case 3u: { return 20u; }
    case 6u: { return 22u; }
    case 7u: { return 24u; }
    case 12u: { return 144u; }
    case 13u: { return 176u; }
    default: { return 212u; } // Q6_K: 210 bytes and 2 of padding (runtime.devicePad)
  }
}

// qrow_vec4s is the vec4<u32>s a row of k values takes.
fn qrow_vec4s(k: u32) -> u32 { return ((k / qvals()) * qbytes() + 15u) / 16u; }

// qrow is the index in w of row n's first word's vec4 (its word j is at + (j / 4) * 8).
fn qrow(n: u32, k4: u32) -> u32 { return (n / 8u) * k4 * 8u + n % 8u; }

fn qw(base: u32, j: u32) -> u32 { return w[base + (j >> 2u) * 8u][j & 3u]; }

// qu32 is the u32 at even byte offset o of the row.
// (o is the same for every column of a group: the branch is uniform.)
fn qu32(base: u32, o: u32) -> u32 {
  let j = o >> 2u;
  if ((o & 2u) == 0u) { return qw(base, j); }
  return (qw(base, j) >> 16u) | (qw(base, j + 1u) << 16u);
}

// qwords8 is the 8 u32 at even byte offset o (32 bytes): 8 loads, or 9 when o is 2 past a
// word (each u32 then spans two words; loading each word once halves the loads).
fn qwords8(base: u32, o: u32) -> array<u32, 8> {
  var out: array<u32, 8>;
  let j0 = o >> 2u;
  if ((o & 2u) == 0u) {
    for (var i = 0u; i < 8u; i++) { out[i] = qw(base, j0 + i); }
    return out;
  }
  var prev = qw(base, j0);
  for (var i = 0u; i < 8u; i++) {
    let next = qw(base, j0 + i + 1u);
    out[i] = (prev >> 16u) | (next << 16u);
    prev = next;
  }
  return out;
}

// qwords4 is qwords8 for 16 bytes.
fn qwords4(base: u32, o: u32) -> array<u32, 4> {
  var out: array<u32, 4>;
  let j0 = o >> 2u;
  if ((o & 2u) == 0u) {
    for (var i = 0u; i < 4u; i++) { out[i] = qw(base, j0 + i); }
    return out;
  }
  var prev = qw(base, j0);
  for (var i = 0u; i < 4u; i++) {
    let next = qw(base, j0 + i + 1u);
    out[i] = (prev >> 16u) | (next << 16u);
    prev = next;
  }
  return out;
}

// qf16 is the f16 at even byte offset o, as f32.
fn qf16(base: u32, o: u32) -> f32 { return unpack2x16float(qw(base, o >> 2u) >> ((o & 2u) * 8u)).x; }

// bits4 is the 4 bytes of v shifted right by s and masked.
fn bits4(v: u32, s: u32, mask: u32) -> vec4u {
  return (vec4u(v) >> (vec4u(0u, 8u, 16u, 24u) + s)) & vec4u(mask);
}

// scale_min is sub-block j's 6-bit scale and min of a Q4_K/Q5_K block (ggml's
// get_scale_min_k4) from its 12 scale bytes, read as the three words s0, s1, s2.
fn scale_min(s0: u32, s1: u32, s2: u32, j: u32) -> vec2f {
  let sh = 8u * (j % 4u);
  if (j < 4u) { return vec2f(f32((s0 >> sh) & 63u), f32((s1 >> sh) & 63u)); }
  let a = (s2 >> sh) & 0xffu;
  return vec2f(f32((a & 15u) | ((((s0 >> sh) >> 6u) & 3u) << 4u)),
               f32((a >> 4u) | ((((s1 >> sh) >> 6u) & 3u) << 4u)));
}

// QGroup is a group of 32 values as integers q and the affine map of each half (16 values):
// value i = q[i / 4][i % 4] * a[h] + b[h], h = i / 16, ab = (a0, a1, b0, b1). A kernel takes
// the dot product with the integers and applies the map once per half.
struct QGroup { q: array<vec4f, 8>, ab: vec4f }

// qgroup is values 32g .. 32g + 32 of the row whose first word's vec4 is base.
fn qgroup(base: u32, g: u32) -> QGroup {
  var o: QGroup;
  switch QTYPE {
    case 8u: { // Q8_0: d, 32 int8
      let b = g * 34u;
      let d = qf16(base, b);
      let qs = qwords8(base, b + 2u);
      for (var i = 0u; i < 8u; i++) {
        let v = qs[i];
        o.q[i] = vec4f(vec4i(bitcast<i32>(v << 24u), bitcast<i32>(v << 16u), bitcast<i32>(v << 8u), bitcast<i32>(v)) >> vec4u(24u));
      }
      o.ab = vec4f(d, d, 0.0, 0.0);
    }
    case 2u, 3u, 6u, 7u: { // Q4_0, Q4_1, Q5_0, Q5_1: value j in qs[j] low nibbles, 16 + j high
      let b = g * qbytes();
      let d = qf16(base, b);
      var m = 0.0;
      var qh = 0u;
      var qs = b + 2u;
      switch QTYPE {
        case 2u: { m = -8.0 * d; }
        case 3u: { m = qf16(base, b + 2u); qs = b + 4u; }
        case 6u: { m = -16.0 * d; qh = qu32(base, b + 2u); qs = b + 6u; }
        default: { m = qf16(base, b + 2u); qh = qu32(base, b + 4u); qs = b + 8u; }
      }
      let qw4 = qwords4(base, qs);
      for (var i = 0u; i < 4u; i++) {
        let v = qw4[i];
        o.q[i] = vec4f(bits4(v, 0u, 15u) | (((vec4u(qh) >> (vec4u(0u, 1u, 2u, 3u) + 4u * i)) & vec4u(1u)) << vec4u(4u)));
        o.q[i + 4u] = vec4f(bits4(v, 4u, 15u) | (((vec4u(qh) >> (vec4u(16u, 17u, 18u, 19u) + 4u * i)) & vec4u(1u)) << vec4u(4u)));
      }
      o.ab = vec4f(d, d, m, m);
    }
    case 12u, 13u: { // Q4_K, Q5_K: sub-block j of 8, pairs sharing 32 bytes of qs
      // Blocks are 144 or 176 bytes (multiples of 16), so every field is at a whole word.
      let bw = (g / 8u) * (qbytes() / 4u);
      let j = g % 8u;
      let dm = unpack2x16float(qw(base, bw));
      let sm = scale_min(qw(base, bw + 1u), qw(base, bw + 2u), qw(base, bw + 3u), j);
      let d1 = dm.x * sm.x;
      let m1 = dm.y * sm.y;
      var qs = bw + 4u;
      if (QTYPE == 13u) { qs = bw + 12u; }
      qs += 8u * (j / 2u);
      for (var i = 0u; i < 8u; i++) {
        var q = bits4(qw(base, qs + i), 4u * (j % 2u), 15u);
        if (QTYPE == 13u) { q |= bits4(qw(base, bw + 4u + i), j, 1u) << vec4u(4u); }
        o.q[i] = vec4f(q);
      }
      o.ab = vec4f(d1, d1, -m1, -m1);
    }
    default: { // Q6_K: ql[128], qh[64], scales[16], d; quarter qq of half h of the block
      // Padded to 212 bytes (53 words) on the device, so every field is at a whole word.
      let bw = (g / 8u) * 53u;
      let h = (g % 8u) / 4u;
      let qq = g % 4u;
      let d = unpack2x16float(qw(base, bw + 52u)).x;
      let ql = bw + 16u * h + 8u * (qq % 2u);
      let qh = bw + 32u + 8u * h;
      let sw = qw(base, bw + 48u + 2u * h + qq / 2u) >> (16u * (qq % 2u)); // scales[8h + 2qq], [8h + 2qq + 1]
      let sc0 = d * f32(bitcast<i32>(sw << 24u) >> 24u);
      let sc1 = d * f32(bitcast<i32>(sw << 16u) >> 24u);
      for (var i = 0u; i < 8u; i++) {
        o.q[i] = vec4f(bits4(qw(base, ql + i), 4u * (qq / 2u), 15u) | (bits4(qw(base, qh + i), 2u * qq, 3u) << vec4u(4u)));
      }
      o.ab = vec4f(sc0, sc1, -32.0 * sc0, -32.0 * sc1);
    }
  }
  return o;
}

// deq32 is values 32g .. 32g + 32 of the row, decoded.
fn deq32(base: u32, g: u32) -> array<vec4f, 8> {
  let qg = qgroup(base, g);
  var o: array<vec4f, 8>;
  for (var i = 0u; i < 8u; i++) {
    if (i < 4u) { o[i] = qg.q[i] * qg.ab.x + qg.ab.z; } else { o[i] = qg.q[i] * qg.ab.y + qg.ab.w; }
  }
  return o;
}
