// attention_wg.wgsl: attention.wgsl for adapters without subgroups (or head sizes that are not
// a multiple of 4): causal grouped-query attention over the paged KV cache for one or many new
// tokens. One workgroup per (query head h, new token m); the token at position p = pos0 + m
// attends to cache positions 0..p, so several new tokens (prefill, or verifying k drafts) see
// each other causally. Query head h reads kv head h / (n_heads / n_kv). Scores are computed a
// chunk of WG positions at a time with an online softmax (running max and sum), so any context
// length fits in workgroup memory. head_dim <= 4 * WG.
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
@group(0) @binding(2) var<storage, read> q: array<f32>;          // [m, q_stride], q heads first
@group(0) @binding(3) var<storage, read> pages: array<u32>;      // [max_pages]
@group(0) @binding(4) var<storage, read> kc: array<wtype>;       // [n_pages, page_size, n_kv, hd], the KV cache's type
@group(0) @binding(5) var<storage, read> vc: array<wtype>;       // [n_pages, page_size, n_kv, hd]
@group(0) @binding(6) var<storage, read_write> out: array<f32>;  // [m, n_heads * hd]
@group(0) @binding(7) var<storage, read> rows: array<RowInfo>;   // [m] with BATCH
@group(0) @binding(8) var<storage, read> seqs: array<SeqInfo>;   // [n_seqs] with BATCH
@group(0) @binding(9) var<storage, read> blocks: array<Block>;   // unused: the bindings are attention.wgsl's
override WG: u32 = 64;
override BATCH: bool = false; // positions and page tables from rows and seqs
var<workgroup> qs: array<f32, 256>;
var<workgroup> sc: array<f32, WG>;
var<workgroup> red: array<f32, WG>;

var<private> po: u32; // the sequence's page table in pages

fn kv_index(t: u32, kvh: u32) -> u32 {
  return ((pages[po + t / P.page_size] * P.page_size + t % P.page_size) * P.n_kv + kvh) * P.head_dim;
}

fn reduce(op_max: bool) -> f32 {
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l_id < s) {
      if (op_max) { red[l_id] = max(red[l_id], red[l_id + s]); } else { red[l_id] += red[l_id + s]; }
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

var<private> l_id: u32;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  l_id = l.x;
  let h = wg.x;
  let m = wg.y;
  if (m >= S.m) { return; }
  let hd = P.head_dim;
  let kvh = h / (P.n_heads / P.n_kv);
  for (var d = l.x; d < hd; d += WG) { qs[d] = q[m * P.q_stride + h * hd + d] * P.scale; }
  var T = S.pos0 + m + 1u;
  po = 0u;
  if (BATCH) {
    _ = blocks[0].rows;
    T = rows[m].pos + 1u;
    po = seqs[rows[m].seq].page_off;
  }
  var run_max = -3.0e38;
  var run_sum = 0.0;
  var acc = vec4f(0.0);
  var lo = 0u; // with a window, the first position seen
  if (P.window > 0u && T > P.window) { lo = T - P.window; }
  for (var t0 = lo; t0 < T; t0 += WG) {
    workgroupBarrier();
    let t = t0 + l.x;
    var s = -3.0e38;
    if (t < T) {
      let kb = kv_index(t, kvh);
      s = 0.0;
      for (var d = 0u; d < hd; d++) { s += qs[d] * f32(kc[kb + d]); }
    }
    red[l.x] = s;
    let new_max = max(run_max, reduce(true));
    var p = 0.0;
    if (t < T) { p = exp(s - new_max); }
    sc[l.x] = p;
    red[l.x] = p;
    let csum = reduce(false);
    let alpha = exp(run_max - new_max);
    run_sum = run_sum * alpha + csum;
    acc *= alpha;
    let n = min(WG, T - t0);
    for (var tt = 0u; tt < n; tt++) {
      let vb = kv_index(t0 + tt, kvh);
      let pt = sc[tt];
      for (var j = 0u; j < 4u; j++) {
        let d = l.x + j * WG;
        if (d < hd) { acc[j] += pt * f32(vc[vb + d]); }
      }
    }
    run_max = new_max;
  }
  for (var j = 0u; j < 4u; j++) {
    let d = l.x + j * WG;
    if (d < hd) { out[m * P.n_heads * hd + h * hd + d] = acc[j] / run_sum; }
  }
}
