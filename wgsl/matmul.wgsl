// matmul.wgsl: y[m, n] (+)= sum_k xin[m, k] * w[n, k] + bias[n] for many rows (prefill).
// Register-blocked: each invocation computes a 4x4 block (4 rows m, 4 columns n); a 16x4
// workgroup covers 64 columns x 16 rows; no workgroup memory (fastest found on lavapipe).
// The fusions NORM, SWIGLU, HAS_BIAS, ACCUM, LAST_ROWS mean what they mean in matvec.wgsl.
//!include common.wgsl
struct Params {
  n: u32, k: u32, eps: f32, col0: u32, y_stride: u32,
  w_stride: u32, // row stride of w in elements (0: k)
  _b: u32, _c: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> x: array<f32>;         // [m, k] or [m, 2k] with SWIGLU
@group(0) @binding(3) var<storage, read> w: array<wtype>;       // [n, k]
@group(0) @binding(4) var<storage, read> bias: array<f32>;      // [y_stride]
@group(0) @binding(5) var<storage, read> normw: array<f32>;     // [k]
@group(0) @binding(6) var<storage, read_write> y: array<f32>;   // [m, y_stride]
override NORM: bool = false;
override SWIGLU: bool = false;
override HAS_BIAS: bool = false;
override ACCUM: bool = false;
override LAST_ROWS: bool = false; // only the last n_draft + 1 rows of x, written as rows 0..

fn xin(m: u32, k: u32) -> f32 {
  if (SWIGLU) {
    let base = m * 2u * P.k;
    return silu(x[base + k]) * x[base + P.k + k];
  }
  return x[m * P.k + k];
}

@compute @workgroup_size(16, 4)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  let n0 = wg.x * 64u + l.x * 4u;
  let m0 = wg.y * 16u + l.y * 4u;
  var M = S.m;
  var row0 = 0u;
  if (LAST_ROWS) {
    M = min(S.n_draft + 1u, S.m);
    row0 = S.m - M;
  }
  if (n0 >= P.n || m0 >= M) { return; }
  // Clamp reads to valid rows/columns; the writes below skip the out-of-range ones.
  var mi: array<u32, 4>;
  var ni: array<u32, 4>;
  for (var i = 0u; i < 4u; i++) {
    mi[i] = row0 + min(m0 + i, M - 1u);
    ni[i] = min(n0 + i, P.n - 1u);
  }
  var rinv = vec4f(1.0);
  if (NORM) {
    var ss = vec4f(0.0);
    for (var k = 0u; k < P.k; k++) {
      let v = vec4f(xin(mi[0], k), xin(mi[1], k), xin(mi[2], k), xin(mi[3], k));
      ss += v * v;
    }
    rinv = inverseSqrt(ss / f32(P.k) + P.eps);
  }
  let ws = select(P.w_stride, P.k, P.w_stride == 0u);
  var acc: array<vec4f, 4>; // acc[i][j]: row m0+i, column n0+j
  for (var k = 0u; k < P.k; k++) {
    var wv = vec4f(f32(w[ni[0] * ws + k]), f32(w[ni[1] * ws + k]), f32(w[ni[2] * ws + k]), f32(w[ni[3] * ws + k]));
    if (NORM) { wv *= normw[k]; }
    acc[0] += xin(mi[0], k) * wv;
    acc[1] += xin(mi[1], k) * wv;
    acc[2] += xin(mi[2], k) * wv;
    acc[3] += xin(mi[3], k) * wv;
  }
  for (var i = 0u; i < 4u; i++) {
    if (m0 + i >= M) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (n0 + j >= P.n) { break; }
      var v = acc[i][j] * rinv[i];
      let col = P.col0 + n0 + j;
      if (HAS_BIAS) { v += bias[col]; }
      let idx = (m0 + i) * P.y_stride + col;
      if (ACCUM) { v += y[idx]; }
      y[idx] = v;
    }
  }
}
