// sample_pick.wgsl: the per-sequence half of the rejection sampler: it walks a sequence's rows
// (sample_rows.wgsl recorded each one) and emits the accepted drafts and one more token:
//   accepted token:  d_j, kept if it is the row's recorded token (its argmax, greedy, or its
//                    sample of p', one-hot drafts), or with q with probability min(1, ratio_j),
//                    decided by u = rand_uniform(seed, seq, pj, 0xffffffff);
//   recovered token: at the first rejection, the row's recorded token (with q: its sample of
//                    max(p' - q', 0));
//   bonus token:     when all drafts are accepted, the last row's recorded sample of p'.
// One invocation per sequence. Output out[s * out_stride ..]: [n, tokens...]; a sequence
// with a non-finite row gets [0, kind, row] instead; one that does not sample gets nothing.
//!include common.wgsl
struct Params { vocab: u32, out_stride: u32, _a: u32, _b: u32 }
struct RowResult { tok: u32, ratio: f32, bad: u32, _a: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> drafts: array<u32>;      // [drafts of all sequences]
@group(0) @binding(3) var<storage, read> seqs: array<SeqInfo>;    // [n_seqs]
@group(0) @binding(4) var<storage, read> res: array<RowResult>;   // [logit_rows]
@group(0) @binding(5) var<storage, read_write> out: array<u32>;   // [n_seqs, out_stride]
override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let s = g.x;
  if (s >= S.n_seqs) { return; }
  let si = seqs[s];
  if (si.sampled == 0u) { return; }
  let o = s * P.out_stride;
  for (var j = 0u; j <= si.n_draft; j++) {
    let r = res[si.logit_row0 + j];
    if (r.bad != 0u) {
      out[o] = 0u;
      out[o + 1u] = r.bad;
      out[o + 2u] = j;
      return;
    }
  }
  var n = 0u;
  for (var j = 0u; j <= si.n_draft; j++) {
    let r = res[si.logit_row0 + j];
    if (j < si.n_draft) {
      let d = drafts[si.draft_off + j];
      var accept = r.tok == d;
      if (si.temperature > 0.0 && si.has_q != 0u) {
        accept = rand_uniform(si.seed_lo, si.seed_hi, si.seq_id, si.pos_sample + j, 0xffffffffu) < r.ratio;
      }
      if (accept) {
        out[o + 1u + n] = d;
        n++;
        continue;
      }
    }
    out[o + 1u + n] = r.tok; // recovered (rejected draft) or bonus (last row)
    n++;
    break;
  }
  out[o] = n;
}
