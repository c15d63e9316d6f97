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
  let k4 = (P.k + 3u) / 4u;
  var col: array<u32, MAXC>;
  for (var c = 0u; c < COLS; c++) { col[c] = (wg.x * COLS + c) * WG + li; }
  var acc: array<array<f32, MAXC>, MAXR>;
  var ss: array<f32, MAXR>;
  for (var q0 = 0u; q0 < k4; q0 += WG) {
    workgroupBarrier();
    let q = q0 + li;
    let nw = normw4(q);
    for (var r = 0u; r < ROWS; r++) {
      let v = xraw4(xrow(rr, min(rb + r, rr.y - 1u)), q);
      ss[r] += dot(v, v);
      xs[r * WG + li] = v * nw;
    }
    workgroupBarrier();
    let qend = min(WG, k4 - q0);
    for (var j = 0u; j < qend; j++) {
      var wv: array<vec4f, MAXC>;
      for (var c = 0u; c < COLS; c++) { wv[c] = wvec4(w[wat(min(col[c], P.n - 1u), q0 + j, k4)]); }
      for (var r = 0u; r < ROWS; r++) {
        let xv = xs[r * WG + j];
        for (var c = 0u; c < COLS; c++) { acc[r][c] += dot(wv[c], xv); }
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
