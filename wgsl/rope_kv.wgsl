// rope_kv.wgsl: rotary position embedding of q and k (Hugging Face half rotation: the pair is
// (x[i], x[i + hd/2]) with inv_freq_i = theta^(-2i/hd)), q rotated in place, k rotated and v
// copied into the sequence's pages of the paged KV cache. One invocation per rotation pair
// or per v element, one grid row per new token m, at position pos0 + m (one sequence) or, with
// BATCH, at the position rows[m] gives, in the pages of its sequence.
// The cache holds wtype: the f16 variant is a half-size KV cache (k and v rounded to f16).
// LLAMA3 applies Llama-3 frequency scaling (factor, low/high frequency factors, original
// context), as in transformers' _compute_llama3_parameters.
//!include common.wgsl
struct Params {
  n_heads: u32, n_kv: u32, head_dim: u32, page_size: u32,
  theta: f32, factor: f32, low_freq: f32, high_freq: f32,
  orig_max_pos: f32, _a: u32, _b: u32, _c: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read_write> qkv: array<f32>;   // [m, (n_heads + 2 n_kv) * hd]
@group(0) @binding(3) var<storage, read> pages: array<u32>;       // [max_pages]: logical -> physical page
@group(0) @binding(4) var<storage, read_write> kc: array<wtype>;  // [n_pages, page_size, n_kv, hd], the KV cache's type
@group(0) @binding(5) var<storage, read_write> vc: array<wtype>;  // [n_pages, page_size, n_kv, hd]
@group(0) @binding(6) var<storage, read> rows: array<RowInfo>;    // [m] with BATCH
@group(0) @binding(7) var<storage, read> seqs: array<SeqInfo>;    // [n_seqs] with BATCH
override WG: u32 = 64;
override LLAMA3: bool = false;
override BATCH: bool = false;

const PI: f32 = 3.14159265358979;

fn inv_freq(i: u32) -> f32 {
  var f = exp2(-f32(2u * i) / f32(P.head_dim) * log2(P.theta));
  if (LLAMA3) {
    let wavelen = 2.0 * PI / f;
    let low_wavelen = P.orig_max_pos / P.low_freq;
    let high_wavelen = P.orig_max_pos / P.high_freq;
    if (wavelen > low_wavelen) {
      f = f / P.factor;
    } else if (wavelen >= high_wavelen) {
      let blend = (P.orig_max_pos / wavelen - P.low_freq) / (P.high_freq - P.low_freq);
      f = (1.0 - blend) * f / P.factor + blend * f;
    }
  }
  return f;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let m = g.y;
  if (m >= S.m) { return; }
  let hd = P.head_dim;
  let half = hd / 2u;
  let n_pairs = (P.n_heads + P.n_kv) * half;
  let width = (P.n_heads + 2u * P.n_kv) * hd;
  let row = m * width;
  var pos = S.pos0 + m;
  var po = 0u; // the sequence's page table in pages
  if (BATCH) {
    pos = rows[m].pos;
    po = seqs[rows[m].seq].page_off;
  }
  let slot = (pages[po + pos / P.page_size] * P.page_size + pos % P.page_size) * P.n_kv;
  let i = g.x;
  if (i < n_pairs) {
    let h = i / half;
    let j = i % half;
    let a = row + h * hd + j;
    let x0 = qkv[a];
    let x1 = qkv[a + half];
    let angle = f32(pos) * inv_freq(j);
    let c = cos(angle);
    let s = sin(angle);
    let r0 = x0 * c - x1 * s;
    let r1 = x0 * s + x1 * c;
    if (h < P.n_heads) {
      qkv[a] = r0;
      qkv[a + half] = r1;
    } else {
      let kv = (slot + h - P.n_heads) * hd + j;
      kc[kv] = wtype(r0);
      kc[kv + half] = wtype(r1);
    }
  } else if (i < n_pairs + P.n_kv * hd) {
    let e = i - n_pairs;
    vc[slot * hd + e] = wtype(qkv[row + (P.n_heads + P.n_kv) * hd + e]);
  }
}
