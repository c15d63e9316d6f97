// argmax_rows.wgsl: out[out_off + r] = argmax_i x[r, i] (lowest index on ties), one workgroup
// per row r. With MAP, the index is translated through map: id + map[id] (EAGLE-3's d2t, from
// a draft vocabulary to the target's). Drafters chain it into the next embed's tokens. With
// GUMBEL, the row is sampled instead: argmax_i x[r, i] / T + g_i, g_i Gumbel noise keyed by
// (seed, seq, pos, id_i) (common.wgsl's generator; id_i is i, or with MAP i's target id),
// which draws i from softmax(x[r] / T) (the Gumbel-max trick); draw holds 1/T (as f32 bits;
// 0: this dispatch takes the argmax), the seed's low and high words, pos and seq. Those are
// the target sampler's key and noise for the token at pos (sample_draw.wgsl), so a draft is
// coupled to the target's own draw there: the likelier the two distributions agree, the
// likelier the draft is that very draw.
//!include common.wgsl
struct Params { cols: u32, out_off: u32, _a: u32, _b: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> x: array<f32>;           // [rows, cols]
@group(0) @binding(3) var<storage, read> map: array<i32>;         // [cols] when MAP
@group(0) @binding(4) var<storage, read_write> out: array<u32>;   // [out_off + rows]
@group(0) @binding(5) var<storage, read> draw: array<u32>;        // [8] when GUMBEL: 1/T bits, seed lo, seed hi, pos, seq, 3 unused
override MAP: bool = false;
override GUMBEL: bool = false;
const WG: u32 = 64u;
var<workgroup> bv: array<f32, WG>;
var<workgroup> bi: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) l: vec3u, @builtin(workgroup_id) wg: vec3u) {
  _ = S.m; // S is unused, but Record binds it at 1: keep it in the auto layout
  let r = wg.x;
  var v = -3.0e38;
  var i = 0xffffffffu;
  let sampled = GUMBEL && draw[0] != 0u;
  for (var c = l.x; c < P.cols; c += WG) {
    var xv = x[r * P.cols + c];
    if (sampled) {
      var id = c;
      if (MAP) { id = u32(i32(c) + map[c]); }
      xv = xv * bitcast<f32>(draw[0]) + gumbel(draw[1], draw[2], draw[4], draw[3], id);
    }
    if (xv > v) { v = xv; i = c; }
  }
  bv[l.x] = v;
  bi[l.x] = i;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l.x < s) {
      let ov = bv[l.x + s];
      let oi = bi[l.x + s];
      if (ov > bv[l.x] || (ov == bv[l.x] && oi < bi[l.x])) { bv[l.x] = ov; bi[l.x] = oi; }
    }
    workgroupBarrier();
  }
  if (l.x == 0u) {
    var id = bi[0];
    if (MAP) { id = u32(i32(id) + map[id]); }
    out[P.out_off + r] = id;
  }
}
