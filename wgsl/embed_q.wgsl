// embed_q.wgsl: embed.wgsl for a block-quantized table (quant.wgsl): x[m, :] =
// table[tokens[m], :] * scale, each invocation decoding one chunk of 256 values of a row. A
// table bigger than one binding is split into parts of whole blocks of 8 rows: this part holds
// rows [row0, row0 + rows) and fills only the tokens that fall in it.
//!include common.wgsl
//!include quant.wgsl
struct Params {
  dim: u32, rows: u32, row0: u32, kg: u32, // kg: the groups (vec4<u32>s) of a row (qrow_vec4s(dim))
  scale: f32,
  _a: u32, _b: u32, _c: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;     // [m]
@group(0) @binding(3) var<storage, read> w: array<vec4<u32>>;    // the part's rows (quant.wgsl)
@group(0) @binding(4) var<storage, read_write> x: array<f32>;    // [m, dim]
override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let b = gid.x;
  let m = gid.y;
  if (b * 256u >= P.dim || m >= S.m) { return; }
  let t = tokens[m];
  if (t < P.row0 || t - P.row0 >= P.rows) { return; }
  let v = deq256(qrow(t - P.row0, P.kg), b);
  let n = min(P.dim - b * 256u, 256u); // a row is whole groups of 32 values
  for (var g = 0u; g < 8u; g++) {
    if (32u * g < n) {
      for (var i = 0u; i < 8u; i++) {
        let o = m * P.dim + b * 256u + 32u * g + 4u * i;
        let s = v[8u * g + i] * P.scale;
        x[o] = s.x;
        x[o + 1u] = s.y;
        x[o + 2u] = s.z;
        x[o + 3u] = s.w;
      }
    }
  }
}
