// chain_next.wgsl: between two steps of a chained decode (a draft model drafting k tokens in one
// submit, runtime/model/chain.go): the token the last step sampled (sample_pick's out[1]) is
// appended to chain and becomes the next step's input, one position on. One invocation; the
// step is a decode step of one sequence (row 0, sequence 0).
//   chain = [count, tokens...]: a step whose logits were not finite appends 0xffffffff (and
//   feeds token 0, so that the chain runs on to its end; the host discards it).
//!include common.wgsl
struct Params { cap: u32, _a: u32, _b: u32, _c: u32 } // cap: the tokens chain holds
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> out: array<u32>;            // sample_pick's [n, tokens...]
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;   // [1]: the next input
@group(0) @binding(4) var<storage, read_write> rows: array<RowInfo>; // [1]: its position
@group(0) @binding(5) var<storage, read_write> seqs: array<SeqInfo>; // [1]: the position it predicts
@group(0) @binding(6) var<storage, read_write> chain: array<u32>;    // [1 + cap]

@compute @workgroup_size(1)
fn main() {
  if (S.m != 1u) { return; } // a decode step's state only
  let n = chain[0];
  if (n >= P.cap) { return; }
  var tok = 0xffffffffu;
  if (out[0] >= 1u) { tok = out[1]; }
  chain[1u + n] = tok;
  chain[0] = n + 1u;
  tokens[0] = select(tok, 0u, tok == 0xffffffffu);
  rows[0].pos += 1u;
  seqs[0].pos_sample += 1u;
}
