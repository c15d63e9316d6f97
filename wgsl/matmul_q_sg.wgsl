// matmul_q_sg.wgsl: matmul_q.wgsl with subgroups (of at least 8 lanes), as matmul.wgsl is
// matmul_wg.wgsl's: no workgroup memory and no barriers. Each invocation loads its columns'
// weights a chunk of 256 values at a time (quant.wgsl's qload: each word once) and decodes
// the chunk's 8 groups of 32 from those registers (qgroup); a group's input is 8 vec4s, one
// loaded by each of lanes 0..7 (lanes past 8 load a copy) and passed to every lane through
// subgroupShuffle. A group's dot product is a (q . x) + b sum(x) per half-group. With one row
// (decode) each column's group is decoded just before its dot product; with several, each
// column's group is decoded once and serves every row.
//!enable subgroups
//!include mat_io.wgsl
//!include quant.wgsl

const MAXR: u32 = 16u; // ROWS <= MAXR
const MAXC: u32 = 4u;  // COLS <= MAXC (= MAXQC; runtime.AddMat gives 4 for one row, 2 for more)

// Acc is an invocation's running sums: acc[r][c] the dot products, ss[r] the rows' sums of
// squares (this lane's part).
struct Acc { acc: array<array<f32, MAXC>, MAXR>, ss: array<f32, MAXR> }

// group adds group gi of the chunk in ch (global group g) to a.
fn group(a: ptr<function, Acc>, ch: ptr<function, Chunk>, g: u32, gi: u32, rr: vec2u, rb: u32, nr: u32, lane: u32) {
  let q = g * 8u + lane % 8u; // this lane's vec4 of the group's input
  let nw = normw4(q);
  if (ROWS == 1u) {
    // One row: its input first, then each column decoded and used at once, so that one
    // column's group is live at a time (fewer registers spilled on CPU adapters).
    let x = group_input(a, 0u, xraw4(xrow(rr, rb), q), nw, lane);
    for (var c = 0u; c < COLS; c++) { (*a).acc[0][c] += group_dot(qgroup(ch, c * QMAX, gi), x); }
    return;
  }
  // Several rows: every column decoded once, then used for each row.
  var qg: array<QGroup, MAXC>;
  for (var c = 0u; c < COLS; c++) { qg[c] = qgroup(ch, c * QMAX, gi); }
  for (var r = 0u; r < nr; r++) {
    let x = group_input(a, r, xraw4(xrow(rr, rb + r), q), nw, lane);
    for (var c = 0u; c < COLS; c++) { (*a).acc[r][c] += group_dot(qg[c], x); }
  }
}

// GroupInput is a group's 32 inputs (x[i / 4][i % 4]) and the sums of its halves.
struct GroupInput { x: array<vec4f, 8>, sum: vec2f }

// group_input gathers row r's group input from the lanes' vec4s v (before the norm weight
// nw), adding the lane's part of the row's sum of squares to a.
fn group_input(a: ptr<function, Acc>, r: u32, v: vec4f, nw: vec4f, lane: u32) -> GroupInput {
  if (lane < 8u) { (*a).ss[r] += dot(v, v); }
  let xl = v * nw;
  var o: GroupInput;
  for (var i = 0u; i < 8u; i++) { o.x[i] = subgroupShuffle(xl, i); }
  let lo = o.x[0] + o.x[1] + o.x[2] + o.x[3];
  let hi = o.x[4] + o.x[5] + o.x[6] + o.x[7];
  o.sum = vec2f(dot(lo, vec4f(1.0)), dot(hi, vec4f(1.0)));
  return o;
}

// group_dot is the dot product of a decoded group with its input.
fn group_dot(qg: QGroup, x: GroupInput) -> f32 {
  var s0 = 0.0;
  var s1 = 0.0;
  for (var i = 0u; i < 4u; i++) {
    s0 += dot(qg.q[i], x.x[i]);
    s1 += dot(qg.q[i + 4u], x.x[i + 4u]);
  }
  return qg.ab.x * s0 + qg.ab.y * s1 + qg.ab.z * x.sum.x + qg.ab.w * x.sum.y;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
  let rr = step_rows();
  let bh = select(P.block_rows, 1u, ROWS == 1u); // the block's height (at most ROWS)
  let rb = wg.y * bh;
  if (rb >= rr.y) { return; }
  let kw4 = qrow_vec4s(P.k);
  var col: array<u32, MAXC>;
  var base: array<u32, MAXC>;
  for (var c = 0u; c < COLS; c++) {
    col[c] = (wg.x * COLS + c) * WG + li;
    base[c] = qrow(min(col[c], P.n - 1u), kw4);
  }
  var a: Acc;
  var ch: Chunk;
  // The block's rows that exist: with one row, the constant 1 (group's one-row path has no
  // loop over rows); with more, a loop (unrolled, its code would grow with the height), so
  // that one pipeline serves every height (runtime.MatRowsOverride).
  let nr = select(min(bh, rr.y - rb), 1u, ROWS == 1u);
  for (var b = 0u; b < (P.k + 255u) / 256u; b++) { // chunks (past k: zero weights, zero input)
    for (var c = 0u; c < COLS; c++) { qload(&ch, c * QMAX, base[c], b); }
    // The 8 groups written out, so that every index into ch is a constant (a compiler may
    // leave a loop rolled, and a rolled loop would index ch at run time).
    let g = b * 8u;
    group(&a, &ch, g, 0u, rr, rb, nr, lane);
    group(&a, &ch, g + 1u, 1u, rr, rb, nr, lane);
    group(&a, &ch, g + 2u, 2u, rr, rb, nr, lane);
    group(&a, &ch, g + 3u, 3u, rr, rb, nr, lane);
    group(&a, &ch, g + 4u, 4u, rr, rb, nr, lane);
    group(&a, &ch, g + 5u, 5u, rr, rb, nr, lane);
    group(&a, &ch, g + 6u, 6u, rr, rb, nr, lane);
    group(&a, &ch, g + 7u, 7u, rr, rb, nr, lane);
  }
  for (var r = 0u; r < nr; r++) {
    let tot = subgroupAdd(a.ss[r]);
    for (var c = 0u; c < COLS; c++) {
      if (col[c] < P.n) { store(rb + r, col[c], a.acc[r][c], tot); }
    }
  }
}
