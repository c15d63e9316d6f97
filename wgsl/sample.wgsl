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
// Output: out[0] = tokens emitted (accepted + 1), out[1..] the tokens.
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

var<private> lid: u32;
// The processed distribution of the current row: p'(i) = kept(i) ? exp(z_i - zmax) / zsum : 0.
var<private> row: u32;
var<private> zmax: f32;
var<private> zsum: f32;
var<private> tk_key: u32;   // top-k: keep ordered(z) >= tk_key
var<private> tp: f32;       // top-p: keep p >= tp (before renormalisation)
var<private> psum: f32;     // normaliser of p before top-p

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

// process computes the state of p' for logits row r.
fn process(r: u32) {
  row = r;
  let V = P.vocab;
  var mx = NEG;
  for (var i = lid; i < V; i += WG) { mx = max(mx, z(i)); }
  zmax = max_all(mx);
  tk_key = 0u;
  if (S.top_k > 0u && S.top_k < V) {
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = tk_key | (1u << u32(bit));
      var c = 0.0;
      for (var i = lid; i < V; i += WG) { c += select(0.0, 1.0, ordered(z(i)) >= cand); }
      if (sum_all(c) >= f32(S.top_k)) { tk_key = cand; }
    }
  }
  var s = 0.0;
  for (var i = lid; i < V; i += WG) { let zi = z(i); if (kept_k(zi)) { s += exp(zi - zmax); } }
  psum = sum_all(s);
  tp = 0.0;
  if (S.top_p > 0.0 && S.top_p < 1.0) {
    var t = 0u;
    for (var bit = 30i; bit >= 0i; bit--) {
      let cand = t | (1u << u32(bit));
      let tc = bitcast<f32>(cand);
      var mass = 0.0;
      for (var i = lid; i < V; i += WG) {
        let zi = z(i);
        if (kept_k(zi)) { let p = p_pre(zi); if (p >= tc) { mass += p; } }
      }
      if (sum_all(mass) >= S.top_p) { t = cand; }
    }
    tp = bitcast<f32>(t);
  }
  var s2 = 0.0;
  for (var i = lid; i < V; i += WG) { let zi = z(i); if (kept(zi)) { s2 += exp(zi - zmax); } }
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
  for (var i = lid; i < P.vocab; i += WG) {
    var w = pprime(i);
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

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u) {
  lid = l.x;
  let k = S.n_draft;
  let rows = k + 1u;
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
