// matmul_q_sg.wgsl: matmul_q.wgsl with subgroups (of at least 8 lanes), as matmul.wgsl is
// matmul_wg.wgsl's: no workgroup memory and no barriers. The input is read a chunk of
// subgroup-size vec4s at a time, each lane loading one vec4 per row; a group of 32 values is 8
// lanes' vec4s, which every lane gets through subgroupShuffle. Each invocation decodes its
// columns' groups to integers (quant.wgsl's qgroup) once and uses them for the block's ROWS
// rows: a (q . x) + b sum(x) per half-group.
//!enable subgroups
//!include mat_io.wgsl
//!include quant.wgsl

const MAXR: u32 = 16u; // ROWS <= MAXR
const MAXC: u32 = 4u;  // COLS <= MAXC

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let rr = step_rows();
  let rb = wg.y * ROWS;
  if (rb >= rr.y) { return; }
  let k4 = (P.k + 3u) / 4u;
  let kw4 = qrow_vec4s(P.k);
  var col: array<u32, MAXC>;
  var base: array<u32, MAXC>;
  for (var c = 0u; c < COLS; c++) {
    col[c] = (wg.x * COLS + c) * WG + li;
    base[c] = qrow(min(col[c], P.n - 1u), kw4);
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
    let gend = min(sgs, k4 - q0) / 8u; // groups of 32 values (8 lanes' vec4s) in the chunk
    for (var gi = 0u; gi < gend; gi++) {
      let g = q0 / 8u + gi;
      var qg: array<QGroup, MAXC>;
      for (var c = 0u; c < COLS; c++) { qg[c] = qgroup(base[c], g); }
      for (var r = 0u; r < ROWS; r++) {
        var x: array<vec4f, 8>;
        for (var i = 0u; i < 8u; i++) { x[i] = subgroupShuffle(xl[r], gi * 8u + i); }
        let lo = x[0] + x[1] + x[2] + x[3];
        let hi = x[4] + x[5] + x[6] + x[7];
        let xsum = vec2f(dot(lo, vec4f(1.0)), dot(hi, vec4f(1.0)));
        for (var c = 0u; c < COLS; c++) {
          var s0 = 0.0;
          var s1 = 0.0;
          for (var i = 0u; i < 4u; i++) {
            s0 += dot(qg[c].q[i], x[i]);
            s1 += dot(qg[c].q[i + 4u], x[i + 4u]);
          }
          acc[r][c] += qg[c].ab.x * s0 + qg[c].ab.y * s1 + qg[c].ab.z * xsum.x + qg[c].ab.w * xsum.y;
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
