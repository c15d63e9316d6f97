// embed.wgsl: token embedding gather. x[m, :] = table[tokens[m], :]
//!include common.wgsl
struct Params { dim: u32, vocab: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;     // [m]
@group(0) @binding(3) var<storage, read> table: array<wtype>;    // [vocab, dim]
@group(0) @binding(4) var<storage, read_write> x: array<f32>;    // [m, dim]
override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let i = g.x;
  let m = g.y;
  if (i >= P.dim || m >= S.m) { return; }
  let t = min(tokens[m], P.vocab - 1u);
  x[m * P.dim + i] = f32(table[t * P.dim + i]);
}
