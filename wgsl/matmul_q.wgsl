// matmul_q.wgsl: y = xin w^T (mat_io.wgsl's fusions) for a block-quantized weight (quant.wgsl),
// decoded inside the kernel 32 values at a time with f32 accumulation: decode (one row),
// verification (a few) and prefill (many) alike, on any adapter (matmul_q_sg is the subgroup
// version, which runtime.AddMat picks where subgroups have 8 lanes or more). Each invocation
// computes a block of ROWS rows x COLS columns (columns a workgroup apart, so the 8 rows of a
// weight block are read together); the input is staged WG vec4s (256 values) at a time in
// workgroup memory, as in matmul_wg.wgsl, and each group of 32 weights, decoded to integers
// (quant.wgsl's qgroup), serves the block's ROWS rows: the dot product with the integers, then
// each half's scale and offset once (w = a q + b: a (q . x) + b sum(x)). k is a multiple of
// the type's block (32 or 256 values).
//!include mat_io.wgsl
//!include quant.wgsl

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
  let kw4 = qrow_vec4s(P.k);
  var col: array<u32, MAXC>;
  var base: array<u32, MAXC>;
  for (var c = 0u; c < COLS; c++) {
    col[c] = (wg.x * COLS + c) * WG + li;
    base[c] = qrow(min(col[c], P.n - 1u), kw4);
  }
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
    let gend = min(WG, k4 - q0) / 8u; // groups of 32 values (8 vec4s) in the chunk
    for (var gi = 0u; gi < gend; gi++) {
      let g = q0 / 8u + gi;
      // Each half's sum of x, for the affine part of the weights (once for all columns).
      var xsum: array<vec2f, MAXR>;
      for (var r = 0u; r < ROWS; r++) {
        let xb = r * WG + gi * 8u;
        let lo = xs[xb] + xs[xb + 1u] + xs[xb + 2u] + xs[xb + 3u];
        let hi = xs[xb + 4u] + xs[xb + 5u] + xs[xb + 6u] + xs[xb + 7u];
        xsum[r] = vec2f(dot(lo, vec4f(1.0)), dot(hi, vec4f(1.0)));
      }
      for (var c = 0u; c < COLS; c++) {
        let qg = qgroup(base[c], g);
        for (var r = 0u; r < ROWS; r++) {
          let xb = r * WG + gi * 8u;
          var s0 = 0.0;
          var s1 = 0.0;
          for (var i = 0u; i < 4u; i++) {
            s0 += dot(qg.q[i], xs[xb + i]);
            s1 += dot(qg.q[i + 4u], xs[xb + i + 4u]);
          }
          acc[r][c] += qg.ab.x * s0 + qg.ab.y * s1 + qg.ab.z * xsum[r].x + qg.ab.w * xsum[r].y;
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
