// sample_rows.wgsl: the per-row half of the rejection sampler (sample_pick.wgsl is the
// other), which is also plain sampling (no drafts). One workgroup per logits row of a batched
// step; row i belongs to sequence s (its SeqInfo) as its j-th row, and predicts the token at
// position pj = pos_sample + j. Row j < n_draft is checked against draft token d_j.
// Each row is processed as in runtime/ref: temperature, then top-k (keep z >= the k-th largest z),
// then softmax, then top-p (keep p >= the largest threshold whose kept mass is >= top_p),
// renormalised: that is p'. The draft's q' is the q row given (has_q) or one-hot on d_j.
// For every row it records what sample_pick needs, whether or not the row is reached:
//   greedy (temperature <= 0): tok = argmax of the row;
//   a draft row with q:  ratio = p'(d_j) / q'(d_j) (the acceptance probability, capped by the
//                 pick), tok = the recovered token, a sample of normalize(max(p' - q', 0));
//   any other row: tok = a sample of p' (a one-hot draft passes iff it is that sample, which
//                 otherwise replaces it: ref.RejectionSample says why that is exact).
// Samples use the Gumbel-max trick with gumbel(seed, seq, pj, i) for token i, so a seeded run
// is reproducible on any adapter, alone or batched. A row holding a NaN or an infinity gets
// bad = 1 (NaN) | 2 (infinity) and nothing else.
// Before all that, the row's logits are processed in place (apply_processors): the sequence's
// logit bias, then its penalties, counting as generated the drafts before the row (row j's
// context holds them), so every verified row is processed as plain decoding would process it.
// With logprobs, the row's log-softmax (after the processors, at temperature 1) of its draft
// and of tok, and of its n likeliest tokens, go to lp.
//!include common.wgsl
struct Params { vocab: u32, out_stride: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read_write> logits: array<f32>; // [logit_rows, vocab], processed in place
@group(0) @binding(3) var<storage, read> drafts: array<u32>;      // [drafts of all sequences]
@group(0) @binding(4) var<storage, read> q: array<f32>;           // [drafts, vocab] where has_q
@group(0) @binding(5) var<storage, read> rowsel: array<u32>;      // [logit_rows]: the step's row of each
@group(0) @binding(6) var<storage, read> rows: array<RowInfo>;    // [m]
@group(0) @binding(7) var<storage, read> seqs: array<SeqInfo>;    // [n_seqs]
@group(0) @binding(8) var<storage, read_write> res: array<RowResult>; // [logit_rows]
@group(0) @binding(9) var<storage, read> adj: array<Adj>;         // the sequences' logit adjustments
@group(0) @binding(10) var<storage, read_write> lp: array<u32>;   // [logit_rows, LP_STRIDE] with logprobs
const LP_STRIDE: u32 = 42u; // f32 lp(draft), f32 lp(tok), then up to 20 x (u32 id, f32 lp)
const WG: u32 = 64u;
const NEG: f32 = -3.0e38;
var<workgroup> redf: array<f32, WG>;
var<workgroup> redi: array<u32, WG>;
var<workgroup> rowkind: atomic<u32>; // check_row: the kinds of non-finite logits in the row
var<workgroup> rowflag: u32;
// Candidate compaction: the top-k (or, for top-p alone, the CAP largest) tokens of a row, in a
// deterministic order, so that top-p and the draw scan CAP entries instead of the vocabulary.
const CAP: u32 = 1024u;
var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> tcount: array<u32, WG>;
var<workgroup> bcast: array<u32, 2>;
var<workgroup> cand_i: array<u32, CAP>;
var<workgroup> cand_z: array<f32, CAP>;

var<private> lid: u32;
var<private> si: SeqInfo; // the row's sequence (a copy of wsi)
var<private> minp_log: f32; // log(min_p), or -inf
var<workgroup> wsi: SeqInfo;

// What sample_pick reads of a row (runtime.RowResult mirrors it).
struct RowResult {
  tok: u32,    // greedy: the argmax; a draft row: the recovered token; the last row: the bonus token
  ratio: f32,  // a draft row (sampling): p'(d) / q'(d)
  bad: u32,    // 1 NaN, 2 infinity, 3 both in the row (nothing else is set)
  _a: u32,
}
// The processed distribution of the current row: p'(i) = kept(i) ? exp(z_i - zmax) / zsum : 0.
var<private> row: u32;
var<private> zmax: f32;
var<private> zsum: f32;
var<private> tk_key: u32;   // top-k: keep ordered(z) >= tk_key
var<private> tp: f32;       // top-p: keep p >= tp (before renormalisation)
var<private> psum: f32;     // normaliser of p before top-p
var<private> compact: bool; // the row's candidates are in cand_i / cand_z
var<private> n_items: u32;  // entries to scan: the candidates, or the whole vocabulary

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

fn ordered(f: f32) -> u32 {
  let b = bitcast<u32>(f);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn z(i: u32) -> f32 { return logits[row * P.vocab + i] / si.temperature; }
fn kept_k(zi: f32) -> bool {
  return (si.top_k == 0u || si.top_k >= P.vocab || ordered(zi) >= tk_key) && zi - zmax >= minp_log;
}
fn p_pre(zi: f32) -> f32 { return exp(zi - zmax) / psum; }
fn kept(zi: f32) -> bool { return kept_k(zi) && (si.top_p >= 1.0 || si.top_p <= 0.0 || p_pre(zi) >= tp); }
fn pprime(i: u32) -> f32 {
  let zi = z(i);
  if (!kept(zi)) { return 0.0; }
  return exp(zi - zmax) / zsum;
}

// item_index and item_z give the c-th entry to scan: a candidate, or token c.
fn item_index(c: u32) -> u32 {
  if (compact) { return cand_i[c]; }
  return c;
}

fn item_z(c: u32) -> f32 {
  if (compact) { return cand_z[c]; }
  return z(c);
}

// kth_key returns ordered() of the k-th largest z of the row, counting duplicates: a radix
// select, 8 bits a round, with a 256-bin histogram of the keys that share the prefix so far.
fn kth_key(k: u32) -> u32 {
  var prefix = 0u;
  var mask = 0u;
  var remaining = k;
  for (var shift = 24i; shift >= 0i; shift -= 8i) {
    for (var b = lid; b < 256u; b += WG) { atomicStore(&hist[b], 0u); }
    workgroupBarrier();
    for (var i = lid; i < P.vocab; i += WG) {
      let key = ordered(z(i));
      if ((key & mask) == prefix) { atomicAdd(&hist[(key >> u32(shift)) & 255u], 1u); }
    }
    workgroupBarrier();
    if (lid == 0u) {
      var cum = 0u;
      for (var b = 255i; b >= 0i; b--) {
        let c = atomicLoad(&hist[u32(b)]);
        if (cum + c >= remaining) {
          bcast[0] = u32(b);
          bcast[1] = remaining - cum;
          break;
        }
        cum += c;
      }
    }
    let sel = workgroupUniformLoad(&bcast[0]);
    remaining = workgroupUniformLoad(&bcast[1]);
    prefix |= sel << u32(shift);
    mask |= 255u << u32(shift);
  }
  return prefix;
}

// compact_from gathers the tokens with ordered(z) >= key_min, in the order of a full scan
// (each invocation's tokens at its offset), so sums over them are the same on every run. It
// returns their count, or a number above CAP when they do not fit (then nothing is gathered).
fn compact_from(key_min: u32) -> u32 {
  var c = 0u;
  for (var i = lid; i < P.vocab; i += WG) { if (ordered(z(i)) >= key_min) { c++; } }
  tcount[lid] = c;
  workgroupBarrier();
  if (lid == 0u) {
    var total = 0u;
    for (var t = 0u; t < WG; t++) {
      let x = tcount[t];
      tcount[t] = total;
      total += x;
    }
    bcast[0] = total;
  }
  let n = workgroupUniformLoad(&bcast[0]);
  if (n <= CAP) {
    var o = tcount[lid];
    for (var i = lid; i < P.vocab; i += WG) {
      let zi = z(i);
      if (ordered(zi) >= key_min) {
        cand_i[o] = i;
        cand_z[o] = zi;
        o++;
      }
    }
  }
  workgroupBarrier();
  return n;
}

// process computes the state of p' for logits row r. With top-k (k <= CAP) the kept tokens
// are compacted first; with top-p alone the CAP largest are, and used when they hold at least
// top_p of the mass (the nucleus is then among them); otherwise every scan covers the
// vocabulary. The thresholds are the same either way.
fn process(r: u32, top_k: u32, top_p: f32) {
  row = r;
  let V = P.vocab;
  let topk = top_k > 0u && top_k < V;
  let topp = top_p > 0.0 && top_p < 1.0;
  compact = false;
  n_items = V;
  var mx = NEG;
  for (var i = lid; i < V; i += WG) { mx = max(mx, z(i)); }
  zmax = max_all(mx);
  minp_log = select(-3.0e38, log(si.min_p), si.min_p > 0.0);
  // Locals, not the module-scope state, decide where barriers run (uniformity).
  var key = 0u;     // top-k threshold key
  var gather = false;
  var cut = 0u;     // gather the tokens with ordered(z) >= cut
  if (topk) {
    key = kth_key(top_k);
    gather = top_k <= CAP;
    cut = key;
  } else if (topp && V > CAP) {
    cut = kth_key(CAP);
    gather = true;
  }
  tk_key = key;
  if (gather) {
    let n = compact_from(cut);
    if (n <= CAP) {
      compact = true;
      n_items = n;
    }
  }
  var s = 0.0;
  for (var i = lid; i < V; i += WG) { let zi = z(i); if (kept_k(zi)) { s += exp(zi - zmax); } }
  psum = sum_all(s);
  tp = 0.0;
  if (topp) {
    // Top-p alone: the candidates serve only if they hold top_p of the mass.
    var cm = 0.0;
    for (var c = lid; c < n_items; c += WG) { cm += p_pre(item_z(c)); }
    let cand_mass = sum_all(cm);
    if (!topk && cand_mass < top_p) {
      compact = false;
      n_items = V;
    }
    var t = 0u;
    for (var bit = 30i; bit >= 0i; bit--) {
      let cand = t | (1u << u32(bit));
      let tc = bitcast<f32>(cand);
      var mass = 0.0;
      for (var c = lid; c < n_items; c += WG) {
        let zi = item_z(c);
        if (kept_k(zi)) { let p = p_pre(zi); if (p >= tc) { mass += p; } }
      }
      if (sum_all(mass) >= top_p) { t = cand; }
    }
    tp = bitcast<f32>(t);
  }
  var s2 = 0.0;
  for (var c = lid; c < n_items; c += WG) { let zi = item_z(c); if (kept(zi)) { s2 += exp(zi - zmax); } }
  zsum = sum_all(s2);
}

fn greedy(r: u32) -> u32 {
  var bv = NEG;
  var bi = 0xffffffffu;
  for (var i = lid; i < P.vocab; i += WG) {
    let v = logits[r * P.vocab + i];
    if (v > bv) { bv = v; bi = i; }
  }
  return argmax_all(bv, bi);
}

// draw samples p' of the current row, or the residual max(p' - q', 0) when qr >= 0 (q's row
// qr when has_q, else one-hot on d).
fn draw(pos: u32, qr: i32, d: u32) -> u32 {
  var bv = NEG;
  var bi = 0xffffffffu;
  for (var c = lid; c < n_items; c += WG) {
    let i = item_index(c);
    let zi = item_z(c);
    var w = 0.0;
    if (kept(zi)) { w = exp(zi - zmax) / zsum; }
    if (qr >= 0) {
      var qi = select(0.0, 1.0, i == d);
      if (si.has_q != 0u) { qi = q[u32(qr) * P.vocab + i]; }
      w = max(w - qi, 0.0);
    }
    if (w > 0.0) {
      let key = log(w) + gumbel(si.seed_lo, si.seed_hi, si.seq_id, pos, i);
      if (key > bv) { bv = key; bi = i; }
    }
  }
  return argmax_all(bv, bi);
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

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  lid = l.x;
  let i = wg.x;
  if (i >= S.logit_rows) { return; }
  if (lid == 0u) { wsi = seqs[rows[rowsel[i]].seq]; }
  let su = workgroupUniformLoad(&wsi); // the workgroup's decisions depend on it: uniform
  si = su;
  let j = i - su.logit_row0;
  let pos = su.pos_sample + j;
  var r = RowResult(0u, 0.0, 0u, 0u);
  r.bad = check_row(i);
  if (r.bad != 0u) {
    if (lid == 0u) { res[i] = r; }
    return;
  }
  apply_processors(i, j, su);
  var tok = 0u; // uniform (the draws' results are), unlike r's other fields
  if (su.temperature <= 0.0) {
    tok = greedy(i);
  } else {
    process(i, su.top_k, su.top_p);
    if (j < su.n_draft && su.has_q != 0u) {
      let d = drafts[su.draft_off + j];
      let pd = pprime(d);
      let qd = q[(su.draft_off + j) * P.vocab + d];
      r.ratio = select(0.0, 1.0, pd > 0.0);
      if (qd > 0.0) { r.ratio = pd / qd; }
      tok = draw(pos, i32(su.draft_off + j), d);
      if (tok == 0xffffffffu) { tok = draw(pos, -1, 0u); }
    } else {
      tok = draw(pos, -1, 0u);
    }
  }
  r.tok = tok;
  if (lid == 0u) { res[i] = r; }
  if (su.logprobs != 0u) {
    var d = tok;
    if (j < su.n_draft) { d = drafts[su.draft_off + j]; }
    row_logprobs(i, d, tok, su.logprobs - 1u);
  }
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

// row_logprobs writes row i's log-softmax (of the processed logits, at temperature 1) of
// tokens d and tok, and its n likeliest tokens with theirs (most likely first; on equal
// logits the lower id first), to lp.
fn row_logprobs(i: u32, d: u32, tok: u32, n: u32) {
  let base = i * P.vocab;
  var mx = NEG;
  for (var t = lid; t < P.vocab; t += WG) { mx = max(mx, logits[base + t]); }
  let lmax = max_all(mx);
  var s = 0.0;
  for (var t = lid; t < P.vocab; t += WG) { s += exp(logits[base + t] - lmax); }
  let lse = lmax + log(sum_all(s));
  let o = i * LP_STRIDE;
  if (lid == 0u) {
    lp[o] = bitcast<u32>(logits[base + d] - lse);
    lp[o + 1u] = bitcast<u32>(logits[base + tok] - lse);
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
      lp[o + 2u + 2u * k] = id;
      lp[o + 3u + 2u * k] = bitcast<u32>(pv - lse);
    }
  }
}
