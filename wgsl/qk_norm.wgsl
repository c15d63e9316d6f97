// qk_norm.wgsl: Qwen3's per-head RMSNorm of q and k, in place, before RoPE: for each new token m
// and each of the n_heads q heads and n_kv k heads,
//   x[m, h, :] = x[m, h, :] * w / sqrt(mean(x[m, h, :]^2) + eps),
// w being q_norm for a q head and k_norm for a k head; v is left alone. One workgroup per
// (head, token).
//!include common.wgsl
struct Params { n_heads: u32, n_kv: u32, head_dim: u32, eps: f32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read_write> qkv: array<f32>; // [m, (n_heads + 2 n_kv) * hd]
@group(0) @binding(3) var<storage, read> w: array<f32>;         // [2, hd]: q_norm, then k_norm
override WG: u32 = 64;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  let h = wg.x;
  let m = wg.y;
  if (m >= S.m || h >= P.n_heads + P.n_kv) { return; } // the same for the whole workgroup
  let hd = P.head_dim;
  let base = (m * (P.n_heads + 2u * P.n_kv) + h) * hd;
  var ss = 0.0;
  for (var i = l.x; i < hd; i += WG) { let v = qkv[base + i]; ss += v * v; }
  red[l.x] = ss;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l.x < s) { red[l.x] += red[l.x + s]; }
    workgroupBarrier();
  }
  let rinv = inverseSqrt(red[0] / f32(hd) + P.eps);
  let woff = select(hd, 0u, h < P.n_heads);
  for (var i = l.x; i < hd; i += WG) { qkv[base + i] = qkv[base + i] * rinv * w[woff + i]; }
}
