// matvec4.wgsl: matvec.wgsl for a width K that is a multiple of 4, reading each weight row as
// vec4s: a quarter of the loads, which is what bounds a mat-vec on CPU adapters (every lane
// gathers its own row). Same Params, bindings, fusions and semantics as matvec.wgsl; the host
// picks it whenever K % 4 == 0.
//!include common.wgsl
struct Params {
  n: u32, k: u32, eps: f32, col0: u32, y_stride: u32,
  w_stride: u32, // row stride of w in elements (0: k), a multiple of 4
  _b: u32, _c: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> x: array<vec4f>;        // [m, k / 4] or [m, 2k / 4] with SWIGLU
@group(0) @binding(3) var<storage, read> w: array<vec4<wtype>>;  // [n, k / 4]
@group(0) @binding(4) var<storage, read> bias: array<f32>;       // [y_stride]
@group(0) @binding(5) var<storage, read> normw: array<f32>;      // [k]
@group(0) @binding(6) var<storage, read_write> y: array<f32>;    // [m, y_stride]
override WG: u32 = 64;
override NORM: bool = false;
override SWIGLU: bool = false;
override HAS_BIAS: bool = false;
override ACCUM: bool = false;
override LAST_ROWS: bool = false;
override SILU: bool = false;
const MAXM: u32 = 16u;
var<workgroup> red: array<f32, WG>;
var<workgroup> rinv: array<f32, MAXM>;

// x4 is x[i .. i + 4] (i a multiple of 4): one 16-byte load, the same address in every lane.
fn x4(i: u32) -> vec4f { return x[i / 4u]; }

// xin is the (fused) input x[m, k] before the norm weight, as in matvec.wgsl.
fn xin(m: u32, k: u32) -> f32 {
  let v = xin4raw(m, k & ~3u);
  return v[k & 3u];
}

fn xin4raw(m: u32, k: u32) -> vec4f {
  if (SWIGLU) {
    let b = m * 2u * P.k + k;
    let g = x4(b);
    return g / (1.0 + exp(-g)) * x4(b + P.k);
  }
  return x4(m * P.k + k);
}

// xin4 is the (fused) input x[m, k..k+4] times the norm weight.
fn xin4(m: u32, k: u32) -> vec4f {
  var v = xin4raw(m, k);
  if (NORM) { v *= vec4f(normw[k], normw[k + 1u], normw[k + 2u], normw[k + 3u]); }
  return v;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  var row0 = 0u;
  var rows = min(S.m, MAXM);
  if (LAST_ROWS) {
    rows = min(S.n_draft + 1u, MAXM);
    row0 = S.m - rows;
  }
  let k4 = P.k / 4u;
  if (NORM) {
    for (var r = 0u; r < rows; r++) {
      var ss = 0.0;
      for (var k = l.x; k < P.k; k += WG) { let v = xin(row0 + r, k); ss += v * v; }
      red[l.x] = ss;
      workgroupBarrier();
      for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (l.x < s) { red[l.x] += red[l.x + s]; }
        workgroupBarrier();
      }
      if (l.x == 0u) { rinv[r] = inverseSqrt(red[0] / f32(P.k) + P.eps); }
      workgroupBarrier();
    }
  }
  let n = wg.x * WG + l.x;
  if (n >= P.n) { return; }
  let wrow = n * (select(P.w_stride, P.k, P.w_stride == 0u) / 4u);
  let col = P.col0 + n;
  if (rows == 1u) {
    var a = vec4f(0.0);
    for (var k = 0u; k < k4; k++) { a += vec4f(w[wrow + k]) * xin4(row0, 4u * k); }
    var v = a.x + a.y + a.z + a.w;
    if (NORM) { v *= rinv[0]; }
    if (HAS_BIAS) { v += bias[col]; }
    if (SILU) { v = silu(v); }
    let i = row0 * 0u + col;
    if (ACCUM) { v += y[i]; }
    y[i] = v;
    return;
  }
  // Several rows (verifying drafts): blocks of four rows with four accumulators, each weight
  // vec4 loaded once per block. (A private array indexed by the row would live in memory on
  // CPU adapters.)
  for (var rb = 0u; rb < rows; rb += 4u) {
    let nr = min(4u, rows - rb);
    var a0 = vec4f(0.0);
    var a1 = vec4f(0.0);
    var a2 = vec4f(0.0);
    var a3 = vec4f(0.0);
    for (var k = 0u; k < k4; k++) {
      let wv = vec4f(w[wrow + k]);
      a0 += wv * xin4(row0 + rb, 4u * k);
      if (nr > 1u) { a1 += wv * xin4(row0 + rb + 1u, 4u * k); }
      if (nr > 2u) { a2 += wv * xin4(row0 + rb + 2u, 4u * k); }
      if (nr > 3u) { a3 += wv * xin4(row0 + rb + 3u, 4u * k); }
    }
    let one = vec4f(1.0);
    let sums = vec4f(dot(a0, one), dot(a1, one), dot(a2, one), dot(a3, one));
    for (var j = 0u; j < nr; j++) {
      let r = rb + j;
      var v = sums[j];
      if (NORM) { v *= rinv[r]; }
      if (HAS_BIAS) { v += bias[col]; }
      if (SILU) { v = silu(v); }
      let i = r * P.y_stride + col;
      if (ACCUM) { v += y[i]; }
      y[i] = v;
    }
  }
}
