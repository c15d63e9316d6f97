// sample_rows.wgsl: the per-row half of the rejection sampler for greedy rows (temperature
// <= 0; sample_draw.wgsl takes the others, and sample_pick.wgsl is the per-sequence half).
// Each row records tok = the argmax of its processed logits (the lowest index on ties): a
// draft passes iff it is that token, which otherwise replaces it. See sample_io.wgsl.
//!include sample_io.wgsl

fn greedy(r: u32) -> u32 {
  var bv = NEG;
  var bi = 0xffffffffu;
  for (var i = lid; i < P.vocab; i += WG) {
    let v = logits[r * P.vocab + i];
    if (v > bv) { bv = v; bi = i; }
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
  if (su.temperature > 0.0) { return; } // sample_draw.wgsl's row
  let j = i - su.logit_row0;
  var r = RowResult(0u, 0.0, 0u, 0u);
  r.bad = check_row(i);
  if (r.bad != 0u) {
    if (lid == 0u) { res[i] = r; }
    return;
  }
  apply_processors(i, j, su);
  apply_mask(i, j, su);
  r.tok = greedy(i);
  finish_row(i, j, su, r);
}
