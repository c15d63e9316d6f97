// rmsnorm.wgsl: y[m, :] = x[m, :] * w / sqrt(mean(x[m, :]^2) + eps); one workgroup per row.
// With ADD, y[m, :] += that instead (Gemma's norms of the attention's and the MLP's outputs,
// added to the residual stream). (The model fuses its input norms into the matmuls that
// follow them; this kernel serves the drafters and Gemma's output norms.)
//!include common.wgsl
struct Params {
  n: u32, eps: f32,
  y_stride: u32, // row stride of y (0: n)
  y_off: u32,    // first column of y written (to build [a | b] concatenations)
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> x: array<f32>;          // [m, n]
@group(0) @binding(3) var<storage, read> w: array<wtype>;        // [n]
@group(0) @binding(4) var<storage, read_write> y: array<f32>;    // [m, y_stride]
override WG: u32 = 64;
override ADD: bool = false;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  let m = wg.y;
  if (m >= S.m) { return; }
  let base = m * P.n;
  var ss = 0.0;
  for (var i = l.x; i < P.n; i += WG) { let v = x[base + i]; ss += v * v; }
  red[l.x] = ss;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l.x < s) { red[l.x] += red[l.x + s]; }
    workgroupBarrier();
  }
  let rinv = inverseSqrt(red[0] / f32(P.n) + P.eps);
  let ys = select(P.y_stride, P.n, P.y_stride == 0u);
  for (var i = l.x; i < P.n; i += WG) {
    let o = m * ys + P.y_off + i;
    let v = x[base + i] * rinv * f32(w[i]);
    if (ADD) { y[o] += v; } else { y[o] = v; }
  }
}
