// embed.wgsl: token embedding gather. x[m, :] = table[tokens[m], :], the table in the blocked
// layout of runtime.Linear (element (t, i) at (((t/8)*kg + i/WK)*8 + t%8)*WK + i%WK, WK values
// a group). A table bigger than one binding is split into parts of whole blocks: this part holds
// rows [row0, row0 + rows) and fills only the tokens that fall in it.
//!include common.wgsl
struct Params {
  dim: u32, rows: u32, row0: u32, kg: u32, // kg: the groups of a row, ceil(dim / WK)
  scale: f32, // the rows are multiplied by it (Gemma's sqrt(hidden); 1 for the others)
  _a: u32, _b: u32, _c: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;     // [m]
@group(0) @binding(3) var<storage, read> table: array<wtype>;    // [ceil(rows/8), kg, 8, WK]
@group(0) @binding(4) var<storage, read_write> x: array<f32>;    // [m, dim]
override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let i = g.x;
  let m = g.y;
  if (i >= P.dim || m >= S.m) { return; }
  let t = tokens[m];
  if (t < P.row0 || t - P.row0 >= P.rows) { return; }
  let r = t - P.row0;
  x[m * P.dim + i] = f32(table[(((r / 8u) * P.kg + i / WK) * 8u + r % 8u) * WK + i % WK]) * P.scale;
}
