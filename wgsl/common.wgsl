// common.wgsl: the per-step block every kernel reads, and the counter-based random generator
// (the same functions as runtime/ref/rng.go).

// Step is written once per forward step; kernels read their dynamic sizes from it, so bind
// groups and pipelines stay fixed across steps. (runtime.StepBlock mirrors it: 32 bytes.)
struct Step {
  m: u32,           // rows (new tokens) in this step
  pos0: u32,        // one-sequence programs (the drafter heads): position of row 0
  n_draft: u32,     // one-sequence programs: drafts among the rows (LAST_ROWS: the last n_draft + 1)
  n_seqs: u32,      // batched programs: sequences in the step (SeqInfo entries)
  logit_rows: u32,  // batched programs: rows the LM head and the sampler see (GATHER)
  n_blocks: u32,    // batched programs: attention blocks (Block entries)
  draw_rows: u32,   // batched programs: logits rows that sample at a temperature (sample_draw)
  _b: u32,
}

// A batched step's rows: each row's sequence (an index into SeqInfo) and position.
struct RowInfo { seq: u32, pos: u32 }

// A batched step's attention blocks: rows row0 .. row0 + rows of one sequence, at consecutive
// positions.
struct Block { row0: u32, rows: u32 }

// A batched step's sequences (runtime.SeqInfo mirrors it: 84 bytes).
struct SeqInfo {
  page_off: u32,     // its page table's offset in the page-table buffer
  logit_row0: u32,   // its first row among the step's logits rows
  n_draft: u32,      // drafts among its rows: it samples from its last n_draft + 1 rows
  sampled: u32,      // 1: it samples this step (0: a prompt chunk that does not end the prompt)
  pos_sample: u32,   // position of the token its first logits row predicts
  draft_off: u32,    // offset of its drafts in drafts (and of their rows in q)
  seed_lo: u32,      // its random key: seed, low and high words, and sequence id
  seed_hi: u32,
  seq_id: u32,
  temperature: f32,  // <= 0: greedy
  top_p: f32,        // 1: off
  top_k: u32,        // 0: off
  has_q: u32,        // 1: draft probabilities q are given; 0: one-hot on the draft token
  min_p: f32,        // keep tokens at least min_p times as likely as the likeliest (0: off)
  presence: f32,     // penalties (sample_rows.wgsl's apply_processors)
  frequency: f32,
  repetition: f32,   // 0 or 1: off
  adj_off: u32,      // its logit adjustments: adj[adj_off .. adj_off + adj_len]
  adj_len: u32,
  logprobs: u32,     // 0: none; 1 + n: each row's logprobs and its n likeliest tokens'
  mask_off: u32,     // 0: none; else its rows' token masks, drafts[mask_off ..]: [n_draft + 1, (vocab + 31) / 32]
}

// A logit adjustment of one token of a sequence: the bias added to it, and what its
// penalties count (runtime.Adj mirrors it).
struct Adj {
  token: u32,
  count: u32,   // occurrences among the tokens generated before the step
  prompt: u32,  // 1: the token is in the prompt
  bias: f32,
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

// gelu_tanh is GELU in its tanh approximation (PyTorch's approximate="tanh"). tanh is written
// out through exp of a non-positive argument, so it neither overflows nor loses the sign.
fn gelu_tanh(x: f32) -> f32 {
  let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  let e = exp(-2.0 * abs(u));
  let t = sign(u) * (1.0 - e) / (1.0 + e);
  return 0.5 * x * (1.0 + t);
}
