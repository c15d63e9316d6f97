// chain_next.wgsl: between two steps of a chained decode (a draft model drafting k tokens for
// each of several sequences in one submit, runtime/model/chain.go): the token each sequence's
// last step sampled (sample_pick's out[s * out_stride + 1]) is appended to its chain and
// becomes its next input, one position on. The step is a decode step of one row per sequence
// (row s, sequence s). One invocation per sequence.
//   chain[s] = [count, cap, tokens...] (chain_stride words): a step whose logits were not
//   finite appends 0xffffffff (and feeds token 0, so that the chain runs on; the host
//   discards it). A chain that holds cap tokens stops: its row no longer advances, so the
//   steps left (for the sequences with longer chains) recompute its last position with the
//   same token, writing the same K and V, and need no page past it.
//!include common.wgsl
struct Params { out_stride: u32, chain_stride: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> out: array<u32>;            // sample_pick's [n, tokens...] per sequence
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;   // [n_seqs]: the next inputs
@group(0) @binding(4) var<storage, read_write> rows: array<RowInfo>; // [n_seqs]: their positions
@group(0) @binding(5) var<storage, read_write> seqs: array<SeqInfo>; // [n_seqs]: the positions they predict
@group(0) @binding(6) var<storage, read_write> chain: array<u32>;    // [n_seqs, chain_stride]

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let s = gid.x;
  if (s >= S.n_seqs || S.m != S.n_seqs) { return; } // a decode step of one row per sequence only
  let c = s * P.chain_stride;
  let n = chain[c];
  let cap = min(chain[c + 1u], P.chain_stride - 2u);
  if (n >= cap) { return; }
  var tok = 0xffffffffu;
  if (out[s * P.out_stride] >= 1u) { tok = out[s * P.out_stride + 1u]; }
  chain[c + 2u + n] = tok;
  chain[c] = n + 1u;
  if (n + 1u < cap) {
    tokens[s] = select(tok, 0u, tok == 0xffffffffu);
    rows[s].pos += 1u;
    seqs[s].pos_sample += 1u;
  }
}
