// sample.wgsl: the rejection sampler, which is also plain sampling (n_draft = 0). One workgroup.
//
// Input: the last n_draft + 1 rows of logits; row j predicts the token at position
// pj = pos0 + m - (n_draft + 1) + j + 1. Row j < n_draft is checked against draft token d_j.
// Each row is processed as in runtime/ref: temperature, then top-k (keep z >= the k-th largest z),
// then softmax, then top-p (keep p >= the largest threshold whose kept mass is >= top_p),
// renormalised: that is p'. The draft's q' is the q row given (has_q) or one-hot on d_j.
//   accepted token:  d_j, kept with probability min(1, p'(d_j) / q'(d_j)), decided by
//                    u = rand_uniform(seed, seq, pj, 0xffffffff);
//   recovered token: at the first rejection, a sample of normalize(max(p' - q', 0));
//   bonus token:     when all drafts are accepted, a sample of p' of the last row.
// Samples use the Gumbel-max trick with gumbel(seed, seq, pj, i) for token i, so a seeded run
// is reproducible on any adapter. Temperature <= 0 is exact argmax matching.
// Output: out[0] = tokens emitted (accepted + 1), out[1..] the tokens. When a row holds a
// NaN or infinite logit nothing is sampled: out[0] = 0, out[1] = 1 (NaN) | 2 (infinity) of
// the first such row, out[2] = that row (when out has room).
//!include common.wgsl
struct Params { vocab: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> logits: array<f32>;      // [n_draft + 1, vocab]
@group(0) @binding(3) var<storage, read> drafts: array<u32>;      // [n_draft]
@group(0) @binding(4) var<storage, read> q: array<f32>;           // [n_draft, vocab] when has_q
@group(0) @binding(5) var<storage, read_write> out: array<u32>;   // [n_draft + 2]
const WG: u32 = 64u;
const NEG: f32 = -3.0e38;
var<workgroup> redf: array<f32, WG>;
var<workgroup> redi: array<u32, WG>;
var<workgroup> decision: u32;
var<workgroup> rowkind: atomic<u32>; // check_rows: the kinds of non-finite logits in a row
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

fn z(i: u32) -> f32 { return logits[row * P.vocab + i] / S.temperature; }
fn kept_k(zi: f32) -> bool { return S.top_k == 0u || S.top_k >= P.vocab || ordered(zi) >= tk_key; }
fn p_pre(zi: f32) -> f32 { return exp(zi - zmax) / psum; }
fn kept(zi: f32) -> bool { return kept_k(zi) && (S.top_p >= 1.0 || S.top_p <= 0.0 || p_pre(zi) >= tp); }
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
fn process(r: u32) {
  row = r;
  let V = P.vocab;
  let topk = S.top_k > 0u && S.top_k < V;
  let topp = S.top_p > 0.0 && S.top_p < 1.0;
  compact = false;
  n_items = V;
  var mx = NEG;
  for (var i = lid; i < V; i += WG) { mx = max(mx, z(i)); }
  zmax = max_all(mx);
  // Locals, not the module-scope state, decide where barriers run (uniformity).
  var key = 0u;     // top-k threshold key
  var gather = false;
  var cut = 0u;     // gather the tokens with ordered(z) >= cut
  if (topk) {
    key = kth_key(S.top_k);
    gather = S.top_k <= CAP;
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
    if (!topk && cand_mass < S.top_p) {
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
      if (sum_all(mass) >= S.top_p) { t = cand; }
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

// draw samples p' of the current row, or the residual max(p' - q', 0) when j >= 0.
fn draw(pos: u32, j: i32, d: u32) -> u32 {
  var bv = NEG;
  var bi = 0xffffffffu;
  for (var c = lid; c < n_items; c += WG) {
    let i = item_index(c);
    let zi = item_z(c);
    var w = 0.0;
    if (kept(zi)) { w = exp(zi - zmax) / zsum; }
    if (j >= 0) {
      var qi = select(0.0, 1.0, i == d);
      if (S.has_q != 0u) { qi = q[u32(j) * P.vocab + i]; }
      w = max(w - qi, 0.0);
    }
    if (w > 0.0) {
      let key = log(w) + gumbel(S.seed_lo, S.seed_hi, S.seq, pos, i);
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

// check_rows returns (kind << 28) | (j + 1) for the first row j holding a non-finite logit,
// kind being 1 (NaN), 2 (infinity) or 3 (both); 0 when every row is finite.
fn check_rows(rows: u32) -> u32 {
  for (var j = 0u; j < rows; j++) {
    if (lid == 0u) { atomicStore(&rowkind, 0u); }
    workgroupBarrier();
    var kind = 0u;
    for (var i = lid; i < P.vocab; i += WG) { kind |= nonfinite(logits[j * P.vocab + i]); }
    if (kind != 0u) { atomicOr(&rowkind, kind); }
    workgroupBarrier();
    if (lid == 0u) { rowflag = atomicLoad(&rowkind); }
    let rk = workgroupUniformLoad(&rowflag);
    if (rk != 0u) { return (rk << 28u) | (j + 1u); }
  }
  return 0u;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u) {
  lid = l.x;
  let k = S.n_draft;
  let rows = k + 1u;
  let b = check_rows(rows);
  if (b != 0u) {
    if (lid == 0u) {
      out[0] = 0u;
      out[1] = b >> 28u;
      if (arrayLength(&out) > 2u) { out[2] = (b & 0x0fffffffu) - 1u; }
    }
    return;
  }
  let pos_first = S.pos0 + S.m - rows + 1u;
  var n = 0u;
  for (var j = 0u; j < rows; j++) {
    let pos = pos_first + j;
    var tok = 0u;
    if (S.temperature <= 0.0) {
      tok = greedy(j);
      if (j < k && tok == drafts[j]) { decision = 1u; } else { decision = 0u; }
    } else {
      process(j);
      if (j < k) {
        let d = drafts[j];
        let pd = pprime(d);
        var qd = 1.0;
        if (S.has_q != 0u) { qd = q[j * P.vocab + d]; }
        var ratio = select(0.0, 1.0, pd > 0.0);
        if (qd > 0.0) { ratio = pd / qd; }
        let u = rand_uniform(S.seed_lo, S.seed_hi, S.seq, pos, 0xffffffffu);
        if (u < ratio) { decision = 1u; tok = d; } else { decision = 0u; }
      } else {
        decision = 0u;
      }
    }
    if (workgroupUniformLoad(&decision) == 1u) {
      if (lid == 0u) { out[1u + n] = drafts[j]; }
      n++;
      continue;
    }
    // Rejected draft (recovered token) or last row (bonus token).
    if (S.temperature > 0.0) {
      if (j < k) {
        tok = draw(pos, i32(j), drafts[j]);
        if (tok == 0xffffffffu) { tok = draw(pos, -1, 0u); }
      } else {
        tok = draw(pos, -1, 0u);
      }
    }
    if (lid == 0u) { out[1u + n] = tok; }
    n++;
    break;
  }
  if (lid == 0u) { out[0] = n; }
}
