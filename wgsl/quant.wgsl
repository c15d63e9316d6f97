// quant.wgsl: ggml's block-quantized weights (QTYPE, from the prelude: Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q4_K, Q5_K or Q6_K, numbered as in GGUF), decoded 32 values at a time; weights/quant is
// the reference. A row of k values is k / qvals() blocks of qbytes() bytes as GGUF stores them
// (Q6_K's with 14 bytes of padding after each, see runtime.devicePad), completed with zero
// blocks to whole chunks of 256 values (qchunk() vec4<u32>s each), in the blocked layout of mat_io.wgsl: vec4 v of row n is
// w[((n / 8) * k4 + v) * 8 + n % 8], k4 = qrow_vec4s(k), so the 8 rows of a block are read
// together. The including kernel declares w: array<vec4<u32>>.
//
// A kernel reads a row a chunk of 256 values at a time (8 blocks of 32 values, or one of 256),
// loaded once into an array of the invocation's (Chunk), so that each word of the weights is
// loaded once however many groups share it; qgroup then decodes group g (32 values) of the
// chunk from that array, with g known when the kernel is compiled (an unrolled loop: an array
// indexed at run time is slow on every adapter, and its code huge on CPU ones). Loads from
// storage cost the most on CPU adapters (one per lane and word), arithmetic on the array's
// words little. Every field starts at an even byte offset, so a u32 at any field spans at
// most two words.

// qvals is the values per block.
fn qvals() -> u32 {
  if (QTYPE >= 12u) { return 256u; }
  return 32u;
}

// qbytes is the bytes per block on the device.
fn qbytes() -> u32 {
  switch QTYPE {
    case 8u: { return 34u; }
    case 2u: { return 18u; }
    case 3u: { return 20u; }
    case 6u: { return 22u; }
    case 7u: { return 24u; }
    case 12u: { return 144u; }
    case 13u: { return 176u; }
    default: { return 224u; } // Q6_K: 210 bytes and 14 of padding (runtime.devicePad)
  }
}

// qchunk is the vec4s of a chunk of 256 values: a multiple of 16 bytes for every type.
fn qchunk() -> u32 { return (256u / qvals()) * qbytes() / 16u; }

// Chunk holds MAXQC chunks (one per column; matmul_q uses the first 2) of the largest type
// (Q8_0: 17 vec4s).
const QMAX: u32 = 17u;
const MAXQC: u32 = 4u;
alias Chunk = array<vec4u, QMAX * MAXQC>;

// qrow_vec4s is the vec4<u32>s a row of k values takes.
fn qrow_vec4s(k: u32) -> u32 { return ((k + 255u) / 256u) * qchunk(); }

// qrow is the index in w of row n's first vec4 (its vec4 v is at + 8v).
fn qrow(n: u32, k4: u32) -> u32 { return (n / 8u) * k4 * 8u + n % 8u; }

// qload loads chunk b of the row whose first vec4 is base into ch[at ..].
fn qload(ch: ptr<function, Chunk>, at: u32, base: u32, b: u32) {
  for (var v = 0u; v < qchunk(); v++) { (*ch)[at + v] = w[base + 8u * (b * qchunk() + v)]; }
}

// cw is word j of the chunk at ch[at ..].
fn cw(ch: ptr<function, Chunk>, at: u32, j: u32) -> u32 { return (*ch)[at + j / 4u][j % 4u]; }

// cu32 is the u32 at even byte offset o of the chunk.
fn cu32(ch: ptr<function, Chunk>, at: u32, o: u32) -> u32 {
  let j = o / 4u;
  if ((o & 2u) == 0u) { return cw(ch, at, j); }
  return (cw(ch, at, j) >> 16u) | (cw(ch, at, j + 1u) << 16u);
}

// cf16 is the f16 at even byte offset o of the chunk, as f32.
fn cf16(ch: ptr<function, Chunk>, at: u32, o: u32) -> f32 {
  return unpack2x16float(cw(ch, at, o / 4u) >> ((o & 2u) * 8u)).x;
}

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

// qgroup is group g (0..7) of the chunk at ch[at ..]; g and at must be known when the kernel
// is compiled (see above).
fn qgroup(ch: ptr<function, Chunk>, at: u32, g: u32) -> QGroup {
  var o: QGroup;
  switch QTYPE {
    case 8u: { // Q8_0: d, 32 int8
      let b = g * 34u;
      let d = cf16(ch, at, b);
      for (var i = 0u; i < 8u; i++) {
        let v = cu32(ch, at, b + 2u + 4u * i);
        o.q[i] = vec4f(vec4i(bitcast<i32>(v << 24u), bitcast<i32>(v << 16u), bitcast<i32>(v << 8u), bitcast<i32>(v)) >> vec4u(24u));
      }
      o.ab = vec4f(d, d, 0.0, 0.0);
    }
    case 2u, 3u, 6u, 7u: { // Q4_0, Q4_1, Q5_0, Q5_1: value j in qs[j] low nibbles, 16 + j high
      let b = g * qbytes();
      let d = cf16(ch, at, b);
      var m = 0.0;
      var qh = 0u;
      var qs = b + 2u;
      switch QTYPE {
        case 2u: { m = -8.0 * d; }
        case 3u: { m = cf16(ch, at, b + 2u); qs = b + 4u; }
        case 6u: { m = -16.0 * d; qh = cu32(ch, at, b + 2u); qs = b + 6u; }
        default: { m = cf16(ch, at, b + 2u); qh = cu32(ch, at, b + 4u); qs = b + 8u; }
      }
      for (var i = 0u; i < 4u; i++) {
        let v = cu32(ch, at, qs + 4u * i);
        o.q[i] = vec4f(bits4(v, 0u, 15u) | (((vec4u(qh) >> (vec4u(0u, 1u, 2u, 3u) + 4u * i)) & vec4u(1u)) << vec4u(4u)));
        o.q[i + 4u] = vec4f(bits4(v, 4u, 15u) | (((vec4u(qh) >> (vec4u(16u, 17u, 18u, 19u) + 4u * i)) & vec4u(1u)) << vec4u(4u)));
      }
      o.ab = vec4f(d, d, m, m);
    }
    case 12u, 13u: { // Q4_K, Q5_K: d, dmin, scales[12], (Q5_K: qh[32]), qs[128]; sub-block g
      let dm = unpack2x16float(cw(ch, at, 0u));
      let sm = scale_min(cw(ch, at, 1u), cw(ch, at, 2u), cw(ch, at, 3u), g);
      let d1 = dm.x * sm.x;
      let m1 = dm.y * sm.y;
      var qs = 4u;
      if (QTYPE == 13u) { qs = 12u; }
      qs += 8u * (g / 2u); // sub-blocks 2p and 2p + 1 share 32 bytes: low and high nibbles
      for (var i = 0u; i < 8u; i++) {
        if (QTYPE == 13u) { // the 5-bit values of 4 bytes put together in one word first
          let v = ((cw(ch, at, qs + i) >> (4u * (g % 2u))) & 0x0f0f0f0fu) | (((cw(ch, at, 4u + i) >> g) & 0x01010101u) << 4u);
          o.q[i] = vec4f(bits4(v, 0u, 255u));
        } else {
          o.q[i] = vec4f(bits4(cw(ch, at, qs + i), 4u * (g % 2u), 15u));
        }
      }
      o.ab = vec4f(d1, d1, -m1, -m1);
    }
    default: { // Q6_K: ql[128], qh[64], scales[16], d; quarter qq of half h of the block
      let h = g / 4u;
      let qq = g % 4u;
      let d = unpack2x16float(cw(ch, at, 52u)).x;
      let ql = 16u * h + 8u * (qq % 2u);
      let qh = 32u + 8u * h;
      let sw = cw(ch, at, 48u + 2u * h + qq / 2u) >> (16u * (qq % 2u)); // scales[8h + 2qq], [8h + 2qq + 1]
      let sc0 = d * f32(bitcast<i32>(sw << 24u) >> 24u);
      let sc1 = d * f32(bitcast<i32>(sw << 16u) >> 24u);
      for (var i = 0u; i < 8u; i++) { // the 6-bit values of 4 bytes put together in one word first
        let v = ((cw(ch, at, ql + i) >> (4u * (qq / 2u))) & 0x0f0f0f0fu) | (((cw(ch, at, qh + i) >> (2u * qq)) & 0x03030303u) << 4u);
        o.q[i] = vec4f(bits4(v, 0u, 255u));
      }
      o.ab = vec4f(sc0, sc1, -32.0 * sc0, -32.0 * sc1);
    }
  }
  return o;
}

// deq256 is chunk b of the row whose first vec4 is base, decoded: group g's value i is
// o[8g + i / 4][i % 4].
fn deq256(base: u32, b: u32) -> array<vec4f, 64> {
  var ch: Chunk;
  qload(&ch, 0u, base, b);
  var o: array<vec4f, 64>;
  for (var g = 0u; g < 8u; g++) {
    let qg = qgroup(&ch, 0u, g);
    for (var i = 0u; i < 8u; i++) {
      if (i < 4u) { o[8u * g + i] = qg.q[i] * qg.ab.x + qg.ab.z; } else { o[8u * g + i] = qg.q[i] * qg.ab.y + qg.ab.w; }
    }
  }
  return o;
}
