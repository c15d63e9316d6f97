// common.wgsl: the per-step block every kernel reads, and the counter-based random generator
// (the same functions as runtime/ref/rng.go).

// Step is written once per forward step; kernels read their dynamic sizes from it, so bind
// groups and pipelines stay fixed across steps. (runtime.StepBlock mirrors it: 48 bytes.)
struct Step {
  m: u32,           // new tokens in this step
  pos0: u32,        // position of the first new token
  n_draft: u32,     // draft tokens among them: logits rows sampled = n_draft + 1
  seq: u32,         // sequence id (a key of the random generator)
  seed_lo: u32,     // seed, low and high words
  seed_hi: u32,
  temperature: f32, // <= 0: greedy
  top_p: f32,       // 1: off
  top_k: u32,       // 0: off
  has_q: u32,       // 1: draft probabilities q are given; 0: one-hot on the draft token
  vocab: u32,       // columns of the logits rows
  _pad: u32,
}

fn pcg_hash(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

fn rand_u32(seed_lo: u32, seed_hi: u32, seq: u32, pos: u32, draw: u32) -> u32 {
  var h = pcg_hash(seed_lo);
  h = pcg_hash(h ^ seed_hi);
  h = pcg_hash(h ^ seq);
  h = pcg_hash(h ^ pos);
  return pcg_hash(h ^ draw);
}

// rand_uniform is in (0, 1): 24 random bits plus half a step.
fn rand_uniform(seed_lo: u32, seed_hi: u32, seq: u32, pos: u32, draw: u32) -> f32 {
  return (f32(rand_u32(seed_lo, seed_hi, seq, pos, draw) >> 8u) + 0.5) * (1.0 / 16777216.0);
}

fn gumbel(seed_lo: u32, seed_hi: u32, seq: u32, pos: u32, draw: u32) -> f32 {
  return -log(-log(rand_uniform(seed_lo, seed_hi, seq, pos, draw)));
}

fn silu(x: f32) -> f32 {
  return x / (1.0 + exp(-x));
}
