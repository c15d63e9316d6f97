// sample_io.wgsl: what the two kernels of the sampler's per-row half share: sample_rows.wgsl
// (greedy rows) and sample_draw.wgsl (rows that sample at a temperature). One workgroup per
// logits row of a batched step; row i belongs to sequence s (its SeqInfo) as its j-th row, and
// predicts the token at position pj = pos_sample + j. Row j < n_draft is checked against draft
// token d_j. Each kernel takes its own rows and leaves the other's alone; for each of them it:
//   - reports a row holding a NaN or an infinity: bad = 1 (NaN) | 2 (infinity), nothing else;
//   - processes the row's logits in place (apply_processors): the sequence's logit bias, then
//     its penalties, counting as generated the drafts before the row (row j's context holds
//     them), so every verified row is processed as plain decoding would process it;
//   - with a token mask (SeqInfo.mask_off: structured outputs), sets the logits of the tokens
//     row j's mask leaves out to MASKED, after the processors;
//   - records in res what sample_pick.wgsl needs, whether or not the row is reached;
//   - with logprobs, writes the row's log-softmax (after the processors, at temperature 1) of
//     its draft and of its token with their ranks, and of its n likeliest tokens, to lp.
//!include common.wgsl
struct Params { vocab: u32, out_stride: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read_write> logits: array<f32>; // [logit_rows, vocab], processed in place
@group(0) @binding(3) var<storage, read> drafts: array<u32>;      // [drafts of all sequences], then the token masks
@group(0) @binding(5) var<storage, read> rowsel: array<u32>;      // [logit_rows]: the step's row of each
@group(0) @binding(6) var<storage, read> rows: array<RowInfo>;    // [m]
@group(0) @binding(7) var<storage, read> seqs: array<SeqInfo>;    // [n_seqs]
@group(0) @binding(8) var<storage, read_write> res: array<RowResult>; // [logit_rows]
@group(0) @binding(9) var<storage, read> adj: array<Adj>;         // the sequences' logit adjustments
@group(0) @binding(10) var<storage, read_write> lp: array<u32>;   // [logit_rows, LP_STRIDE] with logprobs
const LP_STRIDE: u32 = 44u; // f32 lp(draft), f32 lp(tok), u32 rank(draft), u32 rank(tok), then up to 20 x (u32 id, f32 lp)
const WG: u32 = 64u;
const NEG: f32 = -3.0e38;
const MASKED: f32 = -1.0e30; // batch.Masked: a token the row's mask leaves out
var<workgroup> redf: array<f32, WG>;
var<workgroup> redi: array<u32, WG>;
var<workgroup> rowkind: atomic<u32>; // check_row: the kinds of non-finite logits in the row
var<workgroup> rowflag: u32;

var<private> lid: u32;
var<private> si: SeqInfo; // the row's sequence (a copy of wsi)
var<workgroup> wsi: SeqInfo;

// What sample_pick reads of a row (runtime.RowResult mirrors it).
struct RowResult {
  tok: u32,    // greedy: the argmax; a draft row: the recovered token; the last row: the bonus token
  ratio: f32,  // a draft row (sampling): p'(d) / q'(d)
  bad: u32,    // 1 NaN, 2 infinity, 3 both in the row (nothing else is set)
  _a: u32,
}
// load_seq returns the sequence of logits row i, the same in every invocation (uniform).
fn load_seq(i: u32) -> SeqInfo {
  if (lid == 0u) { wsi = seqs[rows[rowsel[i]].seq]; }
  return workgroupUniformLoad(&wsi);
}

fn sum_all(v: f32) -> f32 {
  redf[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { redf[lid] += redf[lid + s]; }
    workgroupBarrier();
  }
  let r = redf[0];
  workgroupBarrier();
  return r;
}

fn max_all(v: f32) -> f32 {
  redf[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { redf[lid] = max(redf[lid], redf[lid + s]); }
    workgroupBarrier();
  }
  let r = redf[0];
  workgroupBarrier();
  return r;
}

// argmax_all returns the index of the largest v, the lowest index on ties.
fn argmax_all(v: f32, i: u32) -> u32 {
  redf[lid] = v;
  redi[lid] = i;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let ov = redf[lid + s];
      let oi = redi[lid + s];
      if (ov > redf[lid] || (ov == redf[lid] && oi < redi[lid])) { redf[lid] = ov; redi[lid] = oi; }
    }
    workgroupBarrier();
  }
  return workgroupUniformLoad(&redi[0]);
}

// nonfinite returns 1 for NaN, 2 for an infinity, 0 for a finite value (from the bits: a
// compiler may assume floats are finite).
fn nonfinite(v: f32) -> u32 {
  let b = bitcast<u32>(v);
  if ((b & 0x7f800000u) != 0x7f800000u) { return 0u; }
  return select(2u, 1u, (b & 0x007fffffu) != 0u);
}

// check_row returns 1 (NaN), 2 (infinity) or 3 (both) when logits row r holds such a value,
// 0 when it is finite.
fn check_row(r: u32) -> u32 {
  if (lid == 0u) { atomicStore(&rowkind, 0u); }
  workgroupBarrier();
  var kind = 0u;
  for (var i = lid; i < P.vocab; i += WG) { kind |= nonfinite(logits[r * P.vocab + i]); }
  if (kind != 0u) { atomicOr(&rowkind, kind); }
  workgroupBarrier();
  if (lid == 0u) { rowflag = atomicLoad(&rowkind); }
  return workgroupUniformLoad(&rowflag);
}

// penalize is a logit after the penalties of the row's sequence, for a token generated count
// times (drafts before the row included) and in the prompt or not.
fn penalize(z0: f32, count: u32, in_prompt: bool) -> f32 {
  var z = z0;
  let rp = si.repetition;
  if (rp > 0.0 && rp != 1.0 && (in_prompt || count > 0u)) { z = select(z * rp, z / rp, z > 0.0); }
  if (count > 0u) { z -= si.frequency * f32(count) + si.presence; }
  return z;
}

// apply_processors processes logits row i (row j of sequence su) in place: each listed token's
// bias and penalties, then the penalties of the drafts before row j that the list lacks (tokens
// new to the sequence).
fn apply_processors(i: u32, j: u32, su: SeqInfo) {
  let pen = su.presence != 0.0 || su.frequency != 0.0 || (su.repetition > 0.0 && su.repetition != 1.0);
  if (su.adj_len == 0u && !pen) { return; }
  for (var e = lid; e < su.adj_len; e += WG) {
    let a = adj[su.adj_off + e];
    var cnt = a.count;
    for (var d = 0u; d < j; d++) { cnt += select(0u, 1u, drafts[su.draft_off + d] == a.token); }
    let at = i * P.vocab + a.token;
    logits[at] = penalize(logits[at] + a.bias, cnt, a.prompt != 0u);
  }
  if (lid == 0u && pen) {
    for (var d = 0u; d < j; d++) {
      let t = drafts[su.draft_off + d];
      var listed = false;
      for (var e = 0u; e < su.adj_len; e++) { listed = listed || adj[su.adj_off + e].token == t; }
      for (var d2 = 0u; d2 < d; d2++) { listed = listed || drafts[su.draft_off + d2] == t; }
      if (!listed) {
        var cnt = 0u;
        for (var d3 = d; d3 < j; d3++) { cnt += select(0u, 1u, drafts[su.draft_off + d3] == t); }
        logits[i * P.vocab + t] = penalize(logits[i * P.vocab + t], cnt, false);
      }
    }
  }
  storageBarrier();
  workgroupBarrier();
}

// mask_base is the first word of row j's token mask (su has one: mask_off != 0).
fn mask_base(j: u32, su: SeqInfo) -> u32 { return su.mask_off + j * ((P.vocab + 31u) / 32u); }

// allowed reports whether the mask at word base allows token t.
fn allowed(base: u32, t: u32) -> bool { return (drafts[base + t / 32u] & (1u << (t % 32u))) != 0u; }

// apply_mask sets the logits of row i (row j of sequence su) that its mask leaves out to
// MASKED; a sequence without a mask keeps them.
fn apply_mask(i: u32, j: u32, su: SeqInfo) {
  if (su.mask_off == 0u) { return; }
  let base = mask_base(j, su);
  for (var t = lid; t < P.vocab; t += WG) {
    if (!allowed(base, t)) { logits[i * P.vocab + t] = MASKED; }
  }
  storageBarrier();
  workgroupBarrier();
}

// row_logprobs writes row i's log-softmax (of the processed logits, at temperature 1) of
// tokens d and tok with their ranks (1 + the tokens of higher logits), and its n likeliest
// tokens with theirs (most likely first; on equal logits the lower id first), to lp.
fn row_logprobs(i: u32, d: u32, tok: u32, n: u32) {
  let base = i * P.vocab;
  let ld = logits[base + d];
  let lt = logits[base + tok];
  var mx = NEG;
  for (var t = lid; t < P.vocab; t += WG) { mx = max(mx, logits[base + t]); }
  let lmax = max_all(mx);
  var s = 0.0;
  var above_d = 0.0; // counts below 2^24 are exact in f32
  var above_t = 0.0;
  for (var t = lid; t < P.vocab; t += WG) {
    let v = logits[base + t];
    s += exp(v - lmax);
    above_d += select(0.0, 1.0, v > ld);
    above_t += select(0.0, 1.0, v > lt);
  }
  let lse = lmax + log(sum_all(s));
  let rank_d = u32(sum_all(above_d)) + 1u;
  let rank_t = u32(sum_all(above_t)) + 1u;
  let o = i * LP_STRIDE;
  if (lid == 0u) {
    lp[o] = bitcast<u32>(ld - lse);
    lp[o + 1u] = bitcast<u32>(lt - lse);
    lp[o + 2u] = rank_d;
    lp[o + 3u] = rank_t;
  }
  var pv = 3.4e38;
  var pi = 0xffffffffu; // the last pick: the next is below it (or equal, at a higher id)
  for (var k = 0u; k < min(n, 20u); k++) {
    var bv = NEG;
    var bi = 0xffffffffu;
    for (var t = lid; t < P.vocab; t += WG) {
      let v = logits[base + t];
      let below = v < pv || (v == pv && (pi == 0xffffffffu || t > pi));
      if (below && (v > bv || bi == 0xffffffffu)) { bv = v; bi = t; }
    }
    let id = argmax_all(bv, bi);
    if (id == 0xffffffffu) { break; }
    pv = logits[base + id];
    pi = id;
    if (lid == 0u) {
      lp[o + 4u + 2u * k] = id;
      lp[o + 5u + 2u * k] = bitcast<u32>(pv - lse);
    }
  }
}

// finish_row records row i's result r (row j of sequence su) and, when asked for, its logprobs.
fn finish_row(i: u32, j: u32, su: SeqInfo, r: RowResult) {
  if (lid == 0u) { res[i] = r; }
  if (su.logprobs != 0u) {
    var d = r.tok;
    if (j < su.n_draft) { d = drafts[su.draft_off + j]; }
    row_logprobs(i, d, r.tok, su.logprobs - 1u);
  }
}
