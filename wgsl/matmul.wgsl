// matmul.wgsl: y = xin w^T (mat_io.wgsl) with subgroups: decode (one row), verification (a
// few rows) and prefill (many rows) alike. Each invocation computes a block of ROWS rows x
// COLS columns, the columns a workgroup apart (so a subgroup's weight loads are contiguous),
// and grid.y walks the blocks of rows. The input is read a chunk of subgroup-size vec4s at a
// time, each lane loading one vec4 per row, and every lane gets each one in turn through
// subgroupShuffle: CPU adapters turn a load that every lane makes at the same address into
// one load per lane, which a shuffle avoids. Each weight vec4 is loaded once and used for the
// block's ROWS rows. matmul_wg.wgsl is the same computation without subgroups.
//!enable subgroups
//!include mat_io.wgsl

const MAXR: u32 = 16u; // ROWS <= MAXR
const MAXC: u32 = 4u;  // COLS <= MAXC

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let rr = step_rows();
  let rb = wg.y * ROWS; // first row of the block, relative to rr.x
  if (rb >= rr.y) { return; }
  let k4 = (P.k + 3u) / 4u;
  var col: array<u32, MAXC>;
  var wbase: array<u32, MAXC>; // index of column c's first vec4 in w; its vec4 q is at + 8q
  for (var c = 0u; c < COLS; c++) {
    col[c] = (wg.x * COLS + c) * WG + li;
    let n = min(col[c], P.n - 1u);
    wbase[c] = (n / 8u) * k4 * 8u + n % 8u;
  }
  var acc: array<array<f32, MAXC>, MAXR>;
  var ss: array<f32, MAXR>;
  for (var q0 = 0u; q0 < k4; q0 += sgs) {
    // This lane's vec4 of each row: k4 index q0 + lane.
    var xl: array<vec4f, MAXR>;
    let q = q0 + lane;
    let nw = normw4(q);
    for (var r = 0u; r < ROWS; r++) {
      let v = xraw4(xrow(rr, min(rb + r, rr.y - 1u)), q);
      ss[r] += dot(v, v);
      xl[r] = v * nw;
    }
    let qend = min(sgs, k4 - q0);
    for (var j = 0u; j < qend; j++) {
      var wv: array<vec4f, MAXC>;
      for (var c = 0u; c < COLS; c++) { wv[c] = wvec4(w[wbase[c] + 8u * (q0 + j)]); }
      for (var r = 0u; r < ROWS; r++) {
        let xs = subgroupShuffle(xl[r], j);
        for (var c = 0u; c < COLS; c++) { acc[r][c] += dot(wv[c], xs); }
      }
    }
  }
  for (var r = 0u; r < ROWS; r++) {
    let tot = subgroupAdd(ss[r]);
    if (rb + r >= rr.y) { break; }
    for (var c = 0u; c < COLS; c++) {
      if (col[c] < P.n) { store(rb + r, col[c], acc[r][c], tot); }
    }
  }
}
