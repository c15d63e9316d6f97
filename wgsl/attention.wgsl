// attention.wgsl: causal grouped-query attention over the paged KV cache, for one or many new
// tokens, with subgroups and no barriers. One subgroup per (query head h, block of up to ROWS
// new tokens of one sequence: rows ROWS*b.. at positions pos0 + m, or with BATCH the blocks
// given, at the positions rows[] gives, in the pages of their sequence); the token at position
// p attends to cache positions 0..p, so several new
// tokens (prefill, or verifying k drafts) see each other causally; query head h reads kv head
// h / (n_heads / n_kv). The positions go a subgroup-size chunk at a time: each lane scores one
// position of the chunk for every row of the block (its key row read once for all of them),
// the online softmax (running max and sum per row) takes the chunk's max and sum with
// subgroupMax and subgroupAdd, and every lane then accumulates its own 4-wide slices of the
// head's dimensions over the chunk's values (each read once for all rows), each position's
// weight passed round with subgroupShuffle. head_dim is a multiple of 4, ROWS * head_dim / 4
// <= MAXQ and head_dim / 4 <= MAXA x the subgroup size (attention_wg.wgsl covers the rest).
// The cache holds wtype (the f16 variant: a half-size KV cache); scores and sums are f32.
//!enable subgroups
//!diagnostic off, subgroup_uniformity
//!include common.wgsl
struct Params {
  n_heads: u32, n_kv: u32, head_dim: u32, page_size: u32,
  q_stride: u32,  // row stride of q (the fused qkv buffer's width)
  scale: f32,     // 1 / sqrt(head_dim) (Gemma: query_pre_attn_scalar^-0.5)
  window: u32,    // > 0: a token at p sees positions p - window + 1 .. p only (a sliding window)
  _b: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> q: array<f32>;           // [m, q_stride], q heads first
@group(0) @binding(3) var<storage, read> pages: array<u32>;       // [max_pages]
@group(0) @binding(4) var<storage, read> kc: array<wvec>;         // [n_pages, page_size, n_kv, hd / 4], the KV cache's type
@group(0) @binding(5) var<storage, read> vc: array<wvec>;         // [n_pages, page_size, n_kv, hd / 4]
@group(0) @binding(6) var<storage, read_write> out: array<f32>;   // [m, n_heads * hd]
@group(0) @binding(7) var<storage, read> rows: array<RowInfo>;    // [m] with BATCH
@group(0) @binding(8) var<storage, read> seqs: array<SeqInfo>;    // [n_seqs] with BATCH
@group(0) @binding(9) var<storage, read> blocks: array<Block>;    // [n_blocks] with BATCH
override WG: u32 = 64;
override ROWS: u32 = 1;
override BATCH: bool = false;
const MAXR: u32 = 8u;  // ROWS <= MAXR
const MAXQ: u32 = 64u; // ROWS * head_dim / 4 <= MAXQ (the queries, in registers)
const MAXA: u32 = 8u;   // head_dim / 4 <= MAXA x subgroup size (each lane's accumulators per row)

// kv4 is the vec4 index of position t's row (kv head kvh) in the cache of the sequence whose
// page table starts at pages[po].
fn kv4(po: u32, t: u32, kvh: u32) -> u32 {
  return ((pages[po + t / P.page_size] * P.page_size + t % P.page_size) * P.n_kv + kvh) * (P.head_dim / 4u);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32) {
  let task = wg.x * (WG / sgs) + li / sgs; // (block of tokens, head) of this subgroup
  let h = task % P.n_heads;
  let b = task / P.n_heads;
  var m0 = b * ROWS;   // the block's first row
  var nr = 0u;         // its rows (the loops run ROWS rows, the last repeated)
  var p0 = S.pos0 + m0; // its first row's position
  var po = 0u;         // its sequence's page table in pages
  if (BATCH) {
    if (b >= S.n_blocks) { return; }
    m0 = blocks[b].row0;
    nr = blocks[b].rows;
    p0 = rows[m0].pos;
    po = seqs[rows[m0].seq].page_off;
  } else {
    if (m0 >= S.m) { return; }
    nr = min(ROWS, S.m - m0);
  }
  let d4 = P.head_dim / 4u;
  let kvh = h / (P.n_heads / P.n_kv);
  var qv: array<vec4f, MAXQ>; // [row, d4]
  for (var r = 0u; r < ROWS; r++) {
    let qb = (m0 + min(r, nr - 1u)) * P.q_stride + h * P.head_dim;
    for (var i = 0u; i < d4; i++) {
      qv[r * d4 + i] = vec4f(q[qb + 4u * i], q[qb + 4u * i + 1u], q[qb + 4u * i + 2u], q[qb + 4u * i + 3u]) * P.scale;
    }
  }
  let T = p0 + nr; // positions the block's last row sees
  // With a window, the block's first row sees from p0 + 1 - window: no row sees before that.
  let lo = select(0u, p0 + 1u - min(P.window, p0 + 1u), P.window > 0u);
  var run_max: array<f32, MAXR>;
  var run_sum: array<f32, MAXR>;
  for (var r = 0u; r < ROWS; r++) { run_max[r] = -3.0e38; }
  var acc: array<vec4f, MAXR * MAXA>; // [row, a]
  let na = (d4 + sgs - 1u) / sgs; // accumulators per row: the lane's slices lane, lane + sgs, ...
  for (var t0 = lo; t0 < T; t0 += sgs) {
    let t = t0 + lane;
    // The scores of position t (zeros past T). Initialised explicitly: a variable declared
    // in a loop must be zeroed at every iteration, which a compiler seen here did not do.
    var s = array<f32, MAXR>();
    if (t < T) {
      let kb = kv4(po, t, kvh);
      for (var i = 0u; i < d4; i++) {
        let kv = wvec4(kc[kb + i]);
        for (var r = 0u; r < ROWS; r++) { s[r] += dot(qv[r * d4 + i], kv); }
      }
    }
    var p: array<f32, MAXR>;
    for (var r = 0u; r < ROWS; r++) {
      let pr = p0 + min(r, nr - 1u); // row r's position
      let seen = t <= pr && (P.window == 0u || t + P.window > pr); // causal, and in the window
      let sr = select(-3.0e38, s[r], seen && t < T);
      let new_max = max(run_max[r], subgroupMax(sr));
      p[r] = select(0.0, exp(sr - new_max), seen && t < T);
      let alpha = exp(run_max[r] - new_max);
      run_sum[r] = run_sum[r] * alpha + subgroupAdd(p[r]);
      run_max[r] = new_max;
      for (var a = 0u; a < na; a++) { acc[r * MAXA + a] *= alpha; }
    }
    let n = min(sgs, T - t0);
    for (var tt = 0u; tt < n; tt++) {
      var pt: array<f32, MAXR>; // position t0 + tt's weight in each row
      for (var r = 0u; r < ROWS; r++) { pt[r] = subgroupShuffle(p[r], tt); }
      let vb = kv4(po, t0 + tt, kvh);
      for (var a = 0u; a < na; a++) {
        let i = lane + a * sgs;
        if (i < d4) {
          let v = wvec4(vc[vb + i]);
          for (var r = 0u; r < ROWS; r++) { acc[r * MAXA + a] += pt[r] * v; }
        }
      }
    }
  }
  for (var r = 0u; r < nr; r++) {
    let ob = (m0 + r) * P.n_heads * P.head_dim + h * P.head_dim;
    for (var a = 0u; a < na; a++) {
      let i = lane + a * sgs;
      if (i < d4) {
        let o = acc[r * MAXA + a] / run_sum[r];
        out[ob + 4u * i] = o.x;
        out[ob + 4u * i + 1u] = o.y;
        out[ob + 4u * i + 2u] = o.z;
        out[ob + 4u * i + 3u] = o.w;
      }
    }
  }
}
