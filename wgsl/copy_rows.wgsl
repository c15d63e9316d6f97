// copy_rows.wgsl: dst[m, dst_off .. dst_off + width] = src[m, 0 .. width] for the step's rows:
// snapshots of the residual stream inside one pass (EAGLE-3 reads the input of three layers).
//!include common.wgsl
struct Params { width: u32, src_stride: u32, dst_stride: u32, dst_off: u32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> S: Step;
@group(0) @binding(2) var<storage, read> src: array<f32>;        // [m, src_stride]
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;  // [m, dst_stride]
override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let i = g.x;
  let m = g.y;
  if (i >= P.width || m >= S.m) { return; }
  dst[m * P.dst_stride + P.dst_off + i] = src[m * P.src_stride + i];
}
