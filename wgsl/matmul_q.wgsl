// matmul_q.wgsl: y = xin w^T (mat_io.wgsl's fusions) for a block-quantized weight (quant.wgsl),
// decoded inside the kernel 32 values at a time with f32 accumulation: decode (one row),
// verification (a few) and prefill (many) alike, on any adapter (matmul_q_sg is the subgroup
// version, which runtime.AddMat picks where subgroups have 8 lanes or more). Each invocation
// computes a block of ROWS rows x COLS columns (columns a workgroup apart, so the 8 rows of a
// weight block are read together); the input is staged a chunk of 256 values at a time in
// workgroup memory, as in matmul_wg.wgsl, and each column's weights for those 256 values
// are loaded once (quant.wgsl's qload), then each of their 8 groups of 32 is decoded to
// integers (qgroup) and serves the block's ROWS rows: the dot product with the integers, then
// each half's scale and offset once (w = a q + b: a (q . x) + b sum(x)). k is a multiple of
// the type's block (32 or 256 values).
//!include mat_io.wgsl
//!include quant.wgsl

const MAXR: u32 = 16u; // ROWS <= MAXR
const MAXC: u32 = 2u;  // COLS <= MAXC (runtime.AddMat gives this kernel 2)
var<workgroup> xs: array<vec4f, ROWS * 64u>;  // [ROWS, 64]: the chunk of each row
var<workgroup> ssw: array<f32, ROWS * WG>;    // [ROWS, WG]: partial sums of squares

// group adds group gi of the staged chunk (whose weights are in ch) to acc.
fn group(acc: ptr<function, array<array<f32, MAXC>, MAXR>>, ch: ptr<function, Chunk>, gi: u32) {
  var qg: array<QGroup, MAXC>;
  for (var c = 0u; c < COLS; c++) { qg[c] = qgroup(ch, c * QMAX, gi); }
  for (var r = 0u; r < ROWS; r++) {
    let xb = r * 64u + gi * 8u;
    let lo = xs[xb] + xs[xb + 1u] + xs[xb + 2u] + xs[xb + 3u];
    let hi = xs[xb + 4u] + xs[xb + 5u] + xs[xb + 6u] + xs[xb + 7u];
    let xsum = vec2f(dot(lo, vec4f(1.0)), dot(hi, vec4f(1.0)));
    for (var c = 0u; c < COLS; c++) {
      var s0 = 0.0;
      var s1 = 0.0;
      for (var i = 0u; i < 4u; i++) {
        s0 += dot(qg[c].q[i], xs[xb + i]);
        s1 += dot(qg[c].q[i + 4u], xs[xb + i + 4u]);
      }
      (*acc)[r][c] += qg[c].ab.x * s0 + qg[c].ab.y * s1 + qg[c].ab.z * xsum.x + qg[c].ab.w * xsum.y;
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let rr = step_rows();
  let rb = wg.y * ROWS;
  if (rb >= rr.y) { return; }
  let kw4 = qrow_vec4s(P.k);
  var col: array<u32, MAXC>;
  var base: array<u32, MAXC>;
  for (var c = 0u; c < COLS; c++) {
    col[c] = (wg.x * COLS + c) * WG + li;
    base[c] = qrow(min(col[c], P.n - 1u), kw4);
  }
  var acc: array<array<f32, MAXC>, MAXR>;
  var ss: array<f32, MAXR>;
  var ch: Chunk;
  for (var b = 0u; b < (P.k + 255u) / 256u; b++) { // chunks (past k: zero weights, zero input)
    workgroupBarrier();
    for (var s = li; s < 64u; s += WG) {
      let q = b * 64u + s;
      let nw = normw4(q);
      for (var r = 0u; r < ROWS; r++) {
        let v = xraw4(xrow(rr, min(rb + r, rr.y - 1u)), q);
        ss[r] += dot(v, v);
        xs[r * 64u + s] = v * nw;
      }
    }
    workgroupBarrier();
    for (var c = 0u; c < COLS; c++) { qload(&ch, c * QMAX, base[c], b); }
    // A rolled loop: ch is indexed at run time (matmul_q_sg writes the groups out, so that
    // its indices are constants; here the same on a CPU adapter's shared-memory loads takes
    // minutes to compile).
    for (var gi = 0u; gi < 8u; gi++) { group(&acc, &ch, gi); }
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
