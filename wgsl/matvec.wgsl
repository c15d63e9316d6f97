// matvec.wgsl: y[m, n] (+)= sum_k xin[m, k] * w[n, k] + bias[n], for the few rows of a decode
// or verify step (m <= 16): each invocation owns one output column n and reads its weight row
// once for all m rows. Fusions, chosen by override constants:
//   NORM:      xin = x * rsqrt(mean(x^2) + eps) * normw   (RMSNorm of the preceding layer)
//   SWIGLU:    xin[m, k] = silu(x[m, k]) * x[m, K + k]     (x holds [gate | up], 2K wide)
//   HAS_BIAS:  + bias[col0 + n]
//   SILU:      silu(...) of the product (+ bias), before ACCUM (Medusa's residual blocks)
//   ACCUM:     y += ...                                    (the residual add)
//   LAST_ROWS: read only the last n_draft + 1 rows of x   (logits only where they are sampled)
// A weight bigger than one binding is split by rows: each part is its own dispatch with col0.
//!include common.wgsl
struct Params {
  n: u32,        // output columns in this part (rows of w)
  k: u32,        // input width
  eps: f32,      // RMSNorm epsilon
  col0: u32,     // first output column of this part
  y_stride: u32, // row stride of y
  w_stride: u32, // row stride of w in elements (0: k); rows are padded where k's bytes are a
                 // multiple of 1 KiB, since such strides alias in CPU caches
  _b: u32, _c: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> x: array<f32>;         // [m, k] or [m, 2k] with SWIGLU
@group(0) @binding(3) var<storage, read> w: array<wtype>;       // [n, k]
@group(0) @binding(4) var<storage, read> bias: array<f32>;      // [y_stride]
@group(0) @binding(5) var<storage, read> normw: array<f32>;     // [k]
@group(0) @binding(6) var<storage, read_write> y: array<f32>;   // [m, y_stride]
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

fn xin(m: u32, k: u32) -> f32 {
  if (SWIGLU) {
    let base = m * 2u * P.k;
    return silu(x[base + k]) * x[base + P.k + k];
  }
  return x[m * P.k + k];
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  var row0 = 0u;
  var rows = min(S.m, MAXM);
  if (LAST_ROWS) {
    rows = min(S.n_draft + 1u, MAXM);
    row0 = S.m - rows;
  }
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
  let wrow = n * select(P.w_stride, P.k, P.w_stride == 0u);
  let col = P.col0 + n;
  if (rows == 1u) {
    // Decode: one row, scalar accumulators (a private array indexed by a loop variable
    // lives in memory on CPU adapters), four partial sums to shorten the dependency chain.
    var a = vec4f(0.0);
    var k = 0u;
    for (; k + 4u <= P.k; k += 4u) {
      var wv = vec4f(f32(w[wrow + k]), f32(w[wrow + k + 1u]), f32(w[wrow + k + 2u]), f32(w[wrow + k + 3u]));
      if (NORM) { wv *= vec4f(normw[k], normw[k + 1u], normw[k + 2u], normw[k + 3u]); }
      a += wv * vec4f(xin(row0, k), xin(row0, k + 1u), xin(row0, k + 2u), xin(row0, k + 3u));
    }
    for (; k < P.k; k++) {
      var wv = f32(w[wrow + k]);
      if (NORM) { wv *= normw[k]; }
      a.x += wv * xin(row0, k);
    }
    var v = a.x + a.y + a.z + a.w;
    if (NORM) { v *= rinv[0]; }
    if (HAS_BIAS) { v += bias[col]; }
    if (SILU) { v = silu(v); }
    if (ACCUM) { v += y[col]; }
    y[col] = v;
    return;
  }
  var acc: array<f32, MAXM>;
  for (var k = 0u; k < P.k; k++) {
    var wv = f32(w[wrow + k]);
    if (NORM) { wv *= normw[k]; }
    for (var r = 0u; r < rows; r++) { acc[r] += xin(row0 + r, k) * wv; }
  }
  for (var r = 0u; r < rows; r++) {
    var v = acc[r];
    if (NORM) { v *= rinv[r]; }
    if (HAS_BIAS) { v += bias[col]; }
    if (SILU) { v = silu(v); }
    let i = r * P.y_stride + col;
    if (ACCUM) { v += y[i]; }
    y[i] = v;
  }
}
