// matmul_wg.wgsl: matmul.wgsl for adapters without subgroups: the same blocks of ROWS rows x
// COLS columns, with each chunk of the input (WG vec4s per row) staged in workgroup memory,
// where every invocation reads it at the same address, and the norm's sums of squares
// gathered there too.
//!include mat_io.wgsl

const MAXR: u32 = 16u; // ROWS <= MAXR
const MAXC: u32 = 4u;  // COLS <= MAXC
var<workgroup> xs: array<vec4f, ROWS * WG>;   // [ROWS, WG]: the chunk of each row
var<workgroup> ssw: array<f32, ROWS * WG>;    // [ROWS, WG]: partial sums of squares

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let rr = step_rows();
  let rb = wg.y * ROWS;
  if (rb >= rr.y) { return; }
  let kg = (P.k + WK - 1u) / WK;
  let kv = kg * WP; // the input's vec4s, whole groups (zeros past k)
  var col: array<u32, MAXC>;
  for (var c = 0u; c < COLS; c++) { col[c] = (wg.x * COLS + c) * WG + li; }
  var acc: array<array<f32, MAXC>, MAXR>;
  var ss: array<f32, MAXR>;
  for (var v0 = 0u; v0 < kv; v0 += WG) {
    workgroupBarrier();
    let nw = normw4(v0 + li);
    for (var r = 0u; r < ROWS; r++) {
      let v = xraw4(xrow(rr, min(rb + r, rr.y - 1u)), v0 + li);
      ss[r] += dot(v, v);
      xs[r * WG + li] = v * nw;
    }
    workgroupBarrier();
    let gend = min(WG, kv - v0) / WP;
    for (var j = 0u; j < gend; j++) {
      var g: array<wgroup, MAXC>;
      for (var c = 0u; c < COLS; c++) { g[c] = w[wat(min(col[c], P.n - 1u), v0 / WP + j, kg)]; }
      for (var h = 0u; h < WP; h++) {
        var wv: array<vec4f, MAXC>;
        for (var c = 0u; c < COLS; c++) { wv[c] = wpart(g[c], h); }
        for (var r = 0u; r < ROWS; r++) {
          let xv = xs[r * WG + WP * j + h];
          for (var c = 0u; c < COLS; c++) { acc[r][c] += dot(wv[c], xv); }
        }
      }
    }
  }
  for (var r = 0u; r < ROWS; r++) { ssw[r * WG + li] = ss[r]; }
  workgroupBarrier();
  for (var r = 0u; r < ROWS; r++) {
    if (rb + r >= rr.y) { break; }
    var tot = 0.0;
    if (NORM) { for (var i = 0u; i < WG; i++) { tot += ssw[r * WG + i]; } }
    for (var c = 0u; c < COLS; c++) {
      if (col[c] < P.n) { store(rb + r, col[c], acc[r][c], tot); }
    }
  }
}
