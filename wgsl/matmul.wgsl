// matmul.wgsl: y = xin w^T (mat_io.wgsl) with subgroups: decode (one row), verification (a
// few rows) and prefill (many rows) alike. Each invocation computes a block of ROWS rows x
// COLS columns, the columns a workgroup apart (so a subgroup's weight loads are contiguous),
// and grid.y walks the blocks of rows. The weight is read a group (WK values, WP vec4s, 16
// bytes) per lane and column at a time, each group loaded once and used for the block's ROWS
// rows. The input is read a chunk of subgroup-size vec4s at a time, each lane loading one vec4
// per row, and every lane gets each one in turn through subgroupShuffle: CPU adapters turn a
// load that every lane makes at the same address into one load per lane, which a shuffle
// avoids. matmul_wg.wgsl is the same computation without subgroups.
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
  let kg = (P.k + WK - 1u) / WK;
  var col: array<u32, MAXC>;
  var wbase: array<u32, MAXC>; // index of column c's group 0 in w; its group q is at + 8q
  for (var c = 0u; c < COLS; c++) {
    col[c] = (wg.x * COLS + c) * WG + li;
    wbase[c] = wat(min(col[c], P.n - 1u), 0u, kg);
  }
  var acc: array<array<f32, MAXC>, MAXR>;
  var ss: array<f32, MAXR>;
  if (ROWS == 1u) {
    // One row: the input of a whole chunk of subgroup-size groups (WP vec4s a lane) is held in
    // registers, twice the groups a chunk of the several-row loop takes.
    for (var q0 = 0u; q0 < kg; q0 += sgs) {
      var xl: array<vec4f, WP>;
      let q = q0 + lane;
      for (var h = 0u; h < WP; h++) {
        let v = xraw4(xrow(rr, rb), WP * q + h);
        ss[0] += dot(v, v);
        xl[h] = v * normw4(WP * q + h);
      }
      let qend = min(sgs, kg - q0);
      for (var j = 0u; j < qend; j++) {
        var xs: array<vec4f, WP>;
        for (var h = 0u; h < WP; h++) { xs[h] = subgroupShuffle(xl[h], j); }
        for (var c = 0u; c < COLS; c++) {
          let g = w[wbase[c] + 8u * (q0 + j)];
          for (var h = 0u; h < WP; h++) { acc[0][c] += dot(wpart(g, h), xs[h]); }
        }
      }
    }
  } else {
    let kv = kg * WP; // the input's vec4s, whole groups (zeros past k)
    for (var v0 = 0u; v0 < kv; v0 += sgs) {
      // This lane's vec4 of each row: vec4 v0 + lane.
      var xl: array<vec4f, MAXR>;
      let nw = normw4(v0 + lane);
      for (var r = 0u; r < ROWS; r++) {
        let v = xraw4(xrow(rr, min(rb + r, rr.y - 1u)), v0 + lane);
        ss[r] += dot(v, v);
        xl[r] = v * nw;
      }
      let gend = min(sgs, kv - v0) / WP;
      for (var j = 0u; j < gend; j++) {
        var g: array<wgroup, MAXC>;
        for (var c = 0u; c < COLS; c++) { g[c] = w[wbase[c] + 8u * (v0 / WP + j)]; }
        for (var h = 0u; h < WP; h++) {
          var wv: array<vec4f, MAXC>;
          for (var c = 0u; c < COLS; c++) { wv[c] = wpart(g[c], h); }
          for (var r = 0u; r < ROWS; r++) {
            let xs = subgroupShuffle(xl[r], WP * j + h);
            for (var c = 0u; c < COLS; c++) { acc[r][c] += dot(wv[c], xs); }
          }
        }
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
