// sample_draw.wgsl: the per-row half of the rejection sampler for rows that sample at a
// temperature (sample_rows.wgsl takes the greedy ones; sample_pick.wgsl is the per-sequence
// half; sample_io.wgsl says what both do to a row). The host dispatches it only in steps that
// have such rows (Step.draw_rows), so a greedy run never compiles it.
// Each row is processed as in runtime/ref: temperature, then top-k (keep z >= the k-th largest
// z) and min-p, then softmax, then top-p (keep p >= the largest threshold whose kept mass is
// >= top_p), renormalised: that is p'. The draft's q' is the q row given (has_q) or one-hot
// on d_j; under a token mask, the q row renormalised over the row's allowed tokens (a draft
// that left the grammar was cut before the step, so the kept ones are samples of that). Each
// row records:
//   a draft row with q:  ratio = p'(d_j) / q'(d_j) (the acceptance probability, capped by the
//                 pick), tok = the recovered token, a sample of normalize(max(p' - q', 0));
//   any other row: tok = a sample of p' (a one-hot draft passes iff it is that sample, which
//                 otherwise replaces it: ref.RejectionSample says why that is exact).
// Samples use the Gumbel-max trick with gumbel(seed, seq, pj, i) for token i, so a seeded run
// is reproducible on any adapter, alone or batched.
//!include sample_io.wgsl
@group(0) @binding(4) var<storage, read> q: array<f32>;           // [drafts, vocab] where has_q
// Candidate compaction: the top-k (or, for top-p alone, the CAP largest) tokens of a row, in a
// deterministic order, so that top-p and the draw scan CAP entries instead of the vocabulary.
const CAP: u32 = 1024u;
var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> tcount: array<u32, WG>;
var<workgroup> bcast: array<u32, 2>;
var<workgroup> cand_i: array<u32, CAP>;
var<workgroup> cand_z: array<f32, CAP>;

var<private> minp_log: f32; // log(min_p), or -inf
// The processed distribution of the current row: p'(i) = kept(i) ? exp(z_i - zmax) / zsum : 0.
var<private> row: u32;
var<private> zmax: f32;
var<private> zsum: f32;
var<private> tk_key: u32;   // top-k: keep ordered(z) >= tk_key
var<private> tp: f32;       // top-p: keep p >= tp (before renormalisation)
var<private> psum: f32;     // normaliser of p before top-p
var<private> compact: bool; // the row's candidates are in cand_i / cand_z
var<private> n_items: u32;  // entries to scan: the candidates, or the whole vocabulary
var<private> qmask: u32;    // the q row's mask base (0: none)
var<private> qnorm: f32;    // the q row's mass on its allowed tokens

// qv is q'(i) of q row qr: q masked and renormalised when the row has a mask.
fn qv(qr: u32, i: u32) -> f32 {
  let v = q[qr * P.vocab + i];
  if (qmask == 0u) { return v; }
  if (!allowed(qmask, i) || qnorm <= 0.0) { return 0.0; }
  return v / qnorm;
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
      if (si.has_q != 0u) { qi = qv(u32(qr), i); }
      w = max(w - qi, 0.0);
    }
    if (w > 0.0) {
      let key = log(w) + gumbel(si.seed_lo, si.seed_hi, si.seq_id, pos, i);
      if (key > bv) { bv = key; bi = i; }
    }
  }
  return argmax_all(bv, bi);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  lid = l.x;
  let i = wg.x;
  if (i >= S.logit_rows) { return; }
  let su = load_seq(i);
  si = su;
  if (su.temperature <= 0.0) { return; } // sample_rows.wgsl's row
  let j = i - su.logit_row0;
  let pos = su.pos_sample + j;
  var r = RowResult(0u, 0.0, 0u, 0u);
  r.bad = check_row(i);
  if (r.bad != 0u) {
    if (lid == 0u) { res[i] = r; }
    return;
  }
  apply_processors(i, j, su);
  apply_mask(i, j, su);
  process(i, su.top_k, su.top_p);
  var tok = 0u; // uniform (the draws' results are), unlike r's other fields
  if (j < su.n_draft && su.has_q != 0u) {
    let d = drafts[su.draft_off + j];
    let pd = pprime(d);
    qmask = 0u;
    if (su.mask_off != 0u) {
      let qr = su.draft_off + j;
      let base = mask_base(j, su);
      var s = 0.0;
      for (var t = lid; t < P.vocab; t += WG) { if (allowed(base, t)) { s += q[qr * P.vocab + t]; } }
      qnorm = sum_all(s);
      qmask = base;
    }
    let qd = qv(su.draft_off + j, d);
    r.ratio = select(0.0, 1.0, pd > 0.0);
    if (qd > 0.0) { r.ratio = pd / qd; }
    tok = draw(pos, i32(su.draft_off + j), d);
    if (tok == 0xffffffffu) { tok = draw(pos, -1, 0u); }
  } else {
    tok = draw(pos, -1, 0u);
  }
  r.tok = tok;
  finish_row(i, j, su, r);
}
