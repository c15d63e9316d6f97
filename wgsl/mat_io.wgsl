// mat_io.wgsl: what matmul.wgsl and matmul_wg.wgsl share: Params, bindings, the fused input
// xin and the fused output store.
//
// y[r, col0 + n] (+)= sum_k xin[r, k] * w[n, k] (+ bias[col0 + n]) for the rows r of the step.
// The weight is stored in blocks of 8 rows (one row per lane of a block, so a subgroup's loads
// are contiguous): w[((n / 8) * kg + q) * 8 + n % 8] is the group (wgroup, the prelude's) of
// w[n, WK q .. WK q + WK], with kg = ceil(k / WK) and zeros past k and past the last row
// (runtime.UploadLinear lays it out); wpart(group, h) is its vec4 w[n, WK q + 4h .. + 4].
//
// Fusions (override constants):
//   NORM      xin = x * normw / rms(x): RMSNorm on the input (the sum of squares is gathered
//             on the way, so the norm costs no extra pass over x)
//   SWIGLU    xin[r, k] = silu(x[r, k]) * x[r, k + K]: the input is [gate | up], 2K wide
//   GEGLU     with SWIGLU: gelu_tanh instead of silu (Gemma's MLP)
//   HAS_BIAS  + bias[col0 + n]
//   SILU      y = silu(...) before ACCUM (Medusa's residual blocks)
//   ACCUM     y += ... (the residual add)
//   LAST_ROWS only the last n_draft + 1 rows of x, written as rows 0.. (a drafter's LM head)
//   GATHER    the rows rowsel[0 .. logit_rows] of x, written as rows 0.. (a batch's LM head)
//   KEEP      also keep[r, keep_off + col0 + n] = the stored value (not with LAST_ROWS or
//             GATHER): a copy of the residual stream as it leaves this matmul, for EAGLE-3's
//             features, without a dispatch of its own
//!include common.wgsl
struct Params {
  n: u32, k: u32, eps: f32, col0: u32, y_stride: u32,
  keep_stride: u32, keep_off: u32, block_rows: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> x: array<vec4f>;          // [rows, k] or [rows, 2k] with SWIGLU, as vec4s
@group(0) @binding(3) var<storage, read> w: array<wgroup>;         // [ceil(n / 8), kg, 8] (see above)
@group(0) @binding(4) var<storage, read> bias: array<f32>;         // [col0 + n]
@group(0) @binding(5) var<storage, read> normw: array<vec4f>;      // [k], as vec4s
@group(0) @binding(6) var<storage, read_write> y: array<f32>;      // [rows, y_stride]
@group(0) @binding(7) var<storage, read> rowsel: array<u32>;       // [logit_rows] with GATHER
@group(0) @binding(8) var<storage, read_write> keep: array<f32>;   // [rows, keep_stride] with KEEP
override NORM: bool = false;
override SWIGLU: bool = false;
override GEGLU: bool = false;
override HAS_BIAS: bool = false;
override SILU: bool = false;
override ACCUM: bool = false;
override LAST_ROWS: bool = false;
override GATHER: bool = false;
override KEEP: bool = false;
override ROWS: u32 = 1;  // rows per invocation (register block; matmul_q_sg: at most, see block_rows)
override COLS: u32 = 1;  // columns per invocation (register block)
override WG: u32 = 64;   // invocations per workgroup (a multiple of the subgroup size)

// step_rows returns the rows the dispatch covers: (first row of x, count).
fn step_rows() -> vec2u {
  if (LAST_ROWS) {
    let rows = min(S.n_draft + 1u, S.m);
    return vec2u(S.m - rows, rows);
  }
  if (GATHER) { return vec2u(0u, S.logit_rows); }
  return vec2u(0u, S.m);
}

// xrow is the row of x that output row i (of the rr = step_rows() rows) reads.
fn xrow(rr: vec2u, i: u32) -> u32 {
  if (GATHER) { return rowsel[i]; }
  return rr.x + i;
}

// xat is x's float i (a buffer is whole vec4s: runtime.Device.NewStorage).
fn xat(i: u32) -> f32 { return x[i / 4u][i % 4u]; }

// xraw is the (SWIGLU-fused) input x[row, k] before the norm; 0 past k.
fn xraw(row: u32, k: u32) -> f32 {
  if (k >= P.k) { return 0.0; }
  if (SWIGLU) {
    let b = row * 2u * P.k + k;
    if (GEGLU) { return gelu_tanh(xat(b)) * xat(b + P.k); }
    return silu(xat(b)) * xat(b + P.k);
  }
  return xat(row * P.k + k);
}

// xraw4 is xraw at k = 4q .. 4q + 4: whole vec4 loads when k is a multiple of 4 (a load is
// the costly part on CPU adapters, and a vec4 costs about what a float does).
fn xraw4(row: u32, q: u32) -> vec4f {
  let k = 4u * q;
  if (P.k % 4u != 0u) {
    return vec4f(xraw(row, k), xraw(row, k + 1u), xraw(row, k + 2u), xraw(row, k + 3u));
  }
  if (k >= P.k) { return vec4f(0.0); }
  let k4 = P.k / 4u;
  if (SWIGLU) {
    let g = x[row * 2u * k4 + q];
    let u = x[row * 2u * k4 + k4 + q];
    if (GEGLU) { return vec4f(gelu_tanh(g.x), gelu_tanh(g.y), gelu_tanh(g.z), gelu_tanh(g.w)) * u; }
    return g / (1.0 + exp(-g)) * u; // silu
  }
  return x[row * k4 + q];
}

// normw4 is the norm weight at k = 4q .. 4q + 4 (1 without NORM, 0 past k).
fn normw4(q: u32) -> vec4f {
  if (!NORM) { return vec4f(1.0); }
  let k = 4u * q;
  if (k >= P.k) { return vec4f(0.0); }
  let v = normw[q];
  if (k + 4u <= P.k) { return v; }
  return select(vec4f(0.0), v, vec4u(k) + vec4u(0u, 1u, 2u, 3u) < vec4u(P.k));
}

// WP is the vec4s in a weight group.
const WP: u32 = WK / 4u;

// wat is the index of column n's group q in w.
fn wat(n: u32, q: u32, kg: u32) -> u32 { return ((n / 8u) * kg + q) * 8u + n % 8u; }

// store writes output row r (relative to the dispatch's first row) of column n: v is the
// dot product, ss the row's sum of squares (NORM).
fn store(r: u32, n: u32, v: f32, ss: f32) {
  var o = v;
  if (NORM) { o *= inverseSqrt(ss / f32(P.k) + P.eps); }
  let col = P.col0 + n;
  if (HAS_BIAS) { o += bias[col]; }
  if (SILU) { o = silu(o); }
  let i = r * P.y_stride + col;
  if (ACCUM) { o += y[i]; }
  y[i] = o;
  if (KEEP) { keep[r * P.keep_stride + P.keep_off + col] = o; }
}
