// Package selftest is wspec's portability suite: every WGSL kernel, in every weight type and
// fusion the model uses, on awkward and model-sized shapes, run on a WebGPU adapter and checked
// element by element against the float64 references of runtime/kernelref (the ground truth).
//
// Every case draws its inputs from a math/rand source seeded by the case's name, poisons its
// output buffers (the NaN bit pattern Poison) before the dispatch, and checks both the values
// the kernel must write and that every element it must not write still holds the poison. A
// value passes when |got - want| <= Atol + Rtol*|want| (see tolerances); the first five
// mismatches are kept as "index: got X want Y" strings, as in llm.c's dev/cuda checks.
package selftest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"strings"
	"time"

	"github.com/wspec/wspec/weights"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
	"github.com/wspec/wspec/wgsl"
)

// Poison is the bit pattern output buffers are filled with before a dispatch: a quiet NaN
// with a payload no arithmetic produces, so an element a kernel wrongly skips fails the value
// check and an element it wrongly writes fails the untouched check.
const Poison uint32 = 0x7FC0DEAD

// PoisonU32 fills integer outputs (token ids, counts).
const PoisonU32 uint32 = 0xDEADBEEF

var poisonF32 = math.Float32frombits(Poison)

// Result is the outcome of one kernel x variant x size case.
type Result struct {
	Kernel          string        `json:"kernel"`
	Variant         string        `json:"variant"`
	Size            string        `json:"size"`
	Pass            bool          `json:"pass"`
	MaxAbsErr       float64       `json:"max_abs_err"`
	MaxRelErr       float64       `json:"max_rel_err"`         // |got-want| / max(|want|, 1e-3)
	Agreement       float64       `json:"agreement,omitempty"` // stochastic sampling: share of seeds matching ref
	Elapsed         time.Duration `json:"elapsed_ns"`          // the whole case: inputs, dispatch, reference
	FirstMismatches []string      `json:"first_mismatches,omitempty"`
	Err             string        `json:"err,omitempty"`     // a setup or device error (the case fails)
	Skipped         string        `json:"skipped,omitempty"` // why the case did not run (it passes)
	checked         int           // values compared
}

// Name is "kernel/variant/size", what Run's filter matches.
func (r Result) Name() string { return r.Kernel + "/" + r.Variant + "/" + r.Size }

// tol is a comparison tolerance: |got - want| <= atol + rtol*|want|.
type tol struct{ atol, rtol float64 }

// tolerances, per kernel and weight type. f16 cases compare against the reference computed on
// the f16-rounded weights, so their error is accumulation order alone; the looser atol leaves
// room for adapters that accumulate f16 products differently.
//
//	kernel     f32 atol  rtol   f16 atol  rtol   why
//	embed      0         0      6.2e-5    0      a copy; f16 subnormals (< 6.1e-5) may be flushed
//	rmsnorm    1e-4      1e-3   2e-3      1e-3   f32 sum of squares, inverseSqrt (2 ulp)
//	matmul     1e-4      1e-3   2e-3      1e-3   f32 dot products of up to 4097 terms (and _wg)
//	rope_kv    2e-3      1e-3   2e-3      2e-3   WGSL sin/cos: absolute 2^-11 on [-pi, pi]; f16: the cache's k and v rounded (1 ulp)
//	qk_norm    1e-4      1e-3   -         -      as rmsnorm, per head (its weights are f32 always)
//	attention  2e-4      1e-3   2e-4      1e-3   f32 online softmax, exp (3 + 2|x| ulp) (and _wg); f16: a cache of f16 values, read exactly
//	copy_rows  0         0      -         -      a copy
//	matmul_q   1e-4      1e-3   (every quantized type)  as matmul, on the decoded weights (and _sg)
//	embed_q    1e-6      1e-6   (every quantized type)  decoding: d q + m may be fused (1 ulp)
//	argmax_rows, sample: exact tokens; stochastic cases: >= 99% (plain) / 98% (rejection) of 50 seeds
var tolerances = map[string][2]tol{
	"embed":        {{0, 0}, {6.2e-5, 0}},
	"rmsnorm":      {{1e-4, 1e-3}, {2e-3, 1e-3}},
	"matmul":       {{1e-4, 1e-3}, {2e-3, 1e-3}},
	"matmul_wg":    {{1e-4, 1e-3}, {2e-3, 1e-3}},
	"rope_kv":      {{2e-3, 1e-3}, {2e-3, 2e-3}},
	"qk_norm":      {{1e-4, 1e-3}, {1e-4, 1e-3}},
	"attention":    {{2e-4, 1e-3}, {2e-4, 1e-3}},
	"attention_wg": {{2e-4, 1e-3}, {2e-4, 1e-3}},
	"copy_rows":    {{0, 0}, {0, 0}},
	"matmul_q":     {{1e-4, 1e-3}, {1e-4, 1e-3}},
	"matmul_q_sg":  {{1e-4, 1e-3}, {1e-4, 1e-3}},
	"embed_q":      {{1e-6, 1e-6}, {1e-6, 1e-6}},
}

// Agreement thresholds of the stochastic sampling cases (Gumbel keys and acceptance ratios
// computed in f32 can differ from float64 when two keys nearly tie).
const (
	sampleAgreement    = 0.99
	rejectionAgreement = 0.98
	seeds              = 50
)

// testCase is one kernel x variant x size check. quick marks the cases of the quick tier.
type testCase struct {
	kernel, variant, size string
	wt                    wgsl.WeightType
	run                   func(c *checker)
	full                  bool // only in the full tier
}

// allCases lists every case, in a fixed order (a kernel's cases together).
func allCases() []testCase {
	var all []testCase
	all = append(all, embedCases()...)
	all = append(all, rmsnormCases()...)
	all = append(all, embedQCases()...)
	all = append(all, matmulCases()...)
	all = append(all, matmulQCases()...)
	all = append(all, ropeCases()...)
	all = append(all, qkNormCases()...)
	all = append(all, attentionCases()...)
	all = append(all, sampleCases()...)
	all = append(all, copyRowsCases()...)
	all = append(all, argmaxCases()...)
	all = append(all, chainCases()...)
	return all
}

// matches reports whether a case's name contains one of filter's comma-separated parts
// (an empty filter matches every case).
func matches(filter, name string) bool {
	if strings.TrimSpace(filter) == "" {
		return true
	}
	for _, f := range strings.Split(filter, ",") {
		if f = strings.TrimSpace(f); f != "" && strings.Contains(name, f) {
			return true
		}
	}
	return false
}

// Options choose the cases Run runs and report its progress.
type Options struct {
	// Filter keeps the cases whose "kernel/variant/size" name contains it (or one of its
	// comma-separated parts); "" keeps all.
	Filter string
	// Full runs every case. The quick tier (the default) keeps every kernel, weight type and
	// fusion and every awkward size, the fusions on the decode block only, and fewer step
	// heights: a fraction of the pipelines to compile, which is most of a first run's time on
	// a CPU adapter.
	Full bool
	// Ctx stops the run between two cases when it is done; what finished is returned.
	Ctx context.Context
	// PerVariant keeps at most that many cases of each kernel/variant, spread evenly over its
	// sizes (the first and the last kept): a sample that still compiles every pipeline, for
	// slow adapters such as a browser's software one. 0 keeps them all.
	PerVariant int
	// Log is told about each failing case as it fails (nil: nothing).
	Log func(string)
	// OnKernel is given each kernel's results as soon as its last case has run (nil: nothing).
	OnKernel func(kernel string, results []Result)
}

// Run runs the cases o chooses on d, in order, and returns their results (those that ran,
// when o.Ctx ends it early).
func Run(d *runtime.Device, o Options) []Result {
	if o.Log == nil {
		o.Log = func(string) {}
	}
	if o.Ctx == nil {
		o.Ctx = context.Background()
	}
	cache := &weightCache{m: map[string]*sharedWeights{}}
	defer cache.release()
	var out []Result
	kernels := map[string]bool{}
	start := time.Now()
	kernelStart := 0
	flush := func() {
		if kernelStart < len(out) && o.OnKernel != nil {
			o.OnKernel(out[kernelStart].Kernel, out[kernelStart:])
		}
		kernelStart = len(out)
	}
	for _, tc := range chosen(o) {
		name := tc.kernel + "/" + tc.variant + "/" + tc.size
		if o.Ctx.Err() != nil {
			break
		}
		if len(out) > kernelStart && out[kernelStart].Kernel != tc.kernel {
			flush()
		}
		r := runCase(d, cache, tc)
		if !r.Pass {
			o.Log(fmt.Sprintf("FAIL %s: %s %s", name, r.Err, strings.Join(r.FirstMismatches, "; ")))
		}
		kernels[tc.kernel] = true
		out = append(out, r)
	}
	flush()
	failed := 0
	for _, r := range out {
		if !r.Pass {
			failed++
		}
	}
	o.Log(fmt.Sprintf("selftest: %d cases (%d kernels), %d failed, %.1fs on %s",
		len(out), len(kernels), failed, time.Since(start).Seconds(), d.Adapter.Info.Name()))
	return out
}

// Names lists the cases o keeps, "kernel/variant/size" in the order Run runs them.
func Names(o Options) []string {
	var out []string
	for _, tc := range chosen(o) {
		out = append(out, tc.kernel+"/"+tc.variant+"/"+tc.size)
	}
	return out
}

// chosen lists the cases o keeps, in order.
func chosen(o Options) []testCase {
	var keep []testCase
	groups := map[string][]int{} // kernel/variant -> indexes in keep
	for _, tc := range allCases() {
		if matches(o.Filter, tc.kernel+"/"+tc.variant+"/"+tc.size) && (o.Full || !tc.full) {
			groups[tc.kernel+"/"+tc.variant] = append(groups[tc.kernel+"/"+tc.variant], len(keep))
			keep = append(keep, tc)
		}
	}
	if o.PerVariant <= 0 {
		return keep
	}
	picked := make([]bool, len(keep))
	for _, idx := range groups {
		n := min(o.PerVariant, len(idx))
		for i := range n {
			j := 0
			if n > 1 {
				j = i * (len(idx) - 1) / (n - 1)
			}
			picked[idx[j]] = true
		}
	}
	var out []testCase
	for i, tc := range keep {
		if picked[i] {
			out = append(out, tc)
		}
	}
	return out
}

// caseError aborts a case from inside a helper.
type caseError struct{ err error }

func runCase(d *runtime.Device, cache *weightCache, tc testCase) (r Result) {
	r = Result{Kernel: tc.kernel, Variant: tc.variant, Size: tc.size}
	if tc.wt == wgsl.F16 && !d.HasF16 {
		r.Pass, r.Skipped = true, "adapter lacks shader-f16"
		return r
	}
	h := fnv.New64a()
	h.Write([]byte(r.Name()))
	c := &checker{d: d, res: &r, cache: cache, rng: rand.New(rand.NewSource(int64(h.Sum64())))}
	t0 := time.Now()
	defer func() {
		r.Elapsed = time.Since(t0)
		for _, b := range c.bufs {
			b.Release()
		}
		for _, p := range c.progs {
			p.Release()
		}
		if e := recover(); e != nil {
			if ce, ok := e.(caseError); ok {
				r.Err = ce.err.Error()
			} else {
				r.Err = fmt.Sprintf("panic: %v", e)
			}
			r.Pass = false
			return
		}
		r.FirstMismatches = append(r.FirstMismatches, c.hard...)
		r.Pass = r.Err == "" && len(r.FirstMismatches) == 0 && (r.checked > 0 || r.Agreement > 0 || r.Skipped != "")
		if !r.Pass && r.Err == "" && len(r.FirstMismatches) == 0 {
			r.Err = "nothing was checked"
		}
	}()
	tc.run(c)
	return r
}

// checker holds one case's state: its device, random source, buffers and result.
type checker struct {
	d     *runtime.Device
	res   *Result
	cache *weightCache
	rng   *rand.Rand
	bufs  []*webgpu.Buffer
	progs []*runtime.Program
	hard  []string // mismatches no agreement threshold forgives (see exact)
}

// exact runs checks whose mismatches fail the case even where a sampler's agreement rate
// forgives its own (sampler.finish drops tolerated token mismatches).
func (c *checker) exact(checks func()) {
	saved := c.res.FirstMismatches
	c.res.FirstMismatches = nil
	checks()
	c.hard = append(c.hard, c.res.FirstMismatches...)
	c.res.FirstMismatches = saved
}

// skip records that the case cannot run on this adapter, and why (it then passes).
func (c *checker) skip(why string) { c.res.Skipped = why }

func (c *checker) must(err error) {
	if err != nil {
		panic(caseError{err})
	}
}

func (c *checker) keep(b *webgpu.Buffer, err error) *webgpu.Buffer {
	c.must(err)
	c.bufs = append(c.bufs, b)
	return b
}

func (c *checker) f32(v []float32) *webgpu.Buffer { return c.keep(c.d.UploadF32("selftest", v)) }

func (c *checker) u32(v []uint32) *webgpu.Buffer {
	if len(v) == 0 {
		v = []uint32{0}
	}
	return c.keep(c.d.UploadBytes("selftest", runtime.U32Bytes(v)))
}

// weights uploads w as the kernel's wtype and returns the buffer and the values the kernel
// sees (w itself, or w rounded to f16).
func (c *checker) weights(w []float32, wt wgsl.WeightType) (*webgpu.Buffer, []float32) {
	if wt == wgsl.F32 {
		return c.f32(w), w
	}
	raw, seen := toF16(w)
	return c.keep(c.d.UploadBytes("selftest f16", raw)), seen
}

// poisoned makes a storage buffer of n floats filled with Poison.
func (c *checker) poisoned(n int) *webgpu.Buffer { return c.f32(poisonSlice(n)) }

func poisonSlice(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = poisonF32
	}
	return v
}

// uniform returns n values uniform in [-scale, scale).
func (c *checker) uniform(n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((2*c.rng.Float64() - 1) * scale)
	}
	return v
}

// dispatch records calls in a fresh program and runs it once for step.
func (c *checker) dispatch(step runtime.StepBlock, calls ...runtime.KernelCall) *runtime.Program {
	p := c.dispatchless(calls...)
	c.must(p.Run(&step))
	return p
}

// dispatchless records calls into a program (released with the case) without running it.
func (c *checker) dispatchless(calls ...runtime.KernelCall) *runtime.Program {
	p, err := c.d.NewProgram()
	c.must(err)
	c.progs = append(c.progs, p)
	for _, call := range calls {
		c.must(p.Add(call))
	}
	return p
}

func (c *checker) readF32(b *webgpu.Buffer, n int) []float32 {
	v, err := c.d.ReadF32(b, n)
	c.must(err)
	return v
}

func (c *checker) readU32(b *webgpu.Buffer, n int) []uint32 {
	v, err := c.d.ReadU32(b, n)
	c.must(err)
	return v
}

// expect compares got with want element by element: where want holds Poison (bit for bit)
// got must still hold it; elsewhere |got - want| <= t.atol + t.rtol*|want|.
func (c *checker) expect(what string, got, want []float32, t tol) {
	r := c.res
	if len(got) != len(want) {
		c.must(fmt.Errorf("%s: %d values read, %d expected", what, len(got), len(want)))
	}
	for i := range want {
		r.checked++
		if math.Float32bits(want[i]) == Poison {
			if math.Float32bits(got[i]) != Poison {
				c.mismatch(fmt.Sprintf("%s[%d]: got %g (0x%08x) want poison (untouched)", what, i, got[i], math.Float32bits(got[i])))
			}
			continue
		}
		g, w := float64(got[i]), float64(want[i])
		d := math.Abs(g - w)
		if math.IsNaN(d) || math.IsInf(d, 0) {
			d = math.MaxFloat64
		}
		r.MaxAbsErr = math.Max(r.MaxAbsErr, d)
		r.MaxRelErr = math.Max(r.MaxRelErr, math.Min(d/math.Max(math.Abs(w), 1e-3), math.MaxFloat64))
		if !(d <= t.atol+t.rtol*math.Abs(w)) {
			c.mismatch(fmt.Sprintf("%s[%d]: got %.7g want %.7g", what, i, g, w))
		}
	}
}

// expectU32 compares integer outputs exactly.
func (c *checker) expectU32(what string, got, want []uint32) {
	for i := range want {
		c.res.checked++
		if got[i] != want[i] {
			c.mismatch(fmt.Sprintf("%s[%d]: got %d want %d", what, i, int32(got[i]), int32(want[i])))
		}
	}
}

func (c *checker) mismatch(s string) {
	if len(c.res.FirstMismatches) < 5 {
		c.res.FirstMismatches = append(c.res.FirstMismatches, s)
	}
}

func tolFor(kernel string, wt wgsl.WeightType) tol {
	if wt.Quantized() { // the reference computes on the decoded values: as f32
		wt = wgsl.F32
	}
	return tolerances[kernel][wt]
}

// toF16 converts v to IEEE binary16 (round to nearest even, subnormals kept, overflow to
// infinity) and returns the little-endian bits and the values they hold.
func toF16(v []float32) ([]byte, []float32) {
	raw := make([]byte, 2*len(v))
	seen := make([]float32, len(v))
	for i, f := range v {
		h := weights.F32ToF16(f)
		raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
		seen[i] = weights.F16ToF32(h)
	}
	return raw, seen
}

// newCase is a case of both tiers (fullOnly marks one of the full tier alone).
func newCase(kernel, variant, size string, wt wgsl.WeightType, run func(c *checker)) testCase {
	return testCase{kernel: kernel, variant: variant, size: size, wt: wt, run: run}
}

// fullOnly marks tc as a case of the full tier alone.
func fullOnly(tc testCase) testCase {
	tc.full = true
	return tc
}

// PoisonF16 is the poison of f16 outputs (a KV cache in f16): a NaN no arithmetic produces.
const PoisonF16 uint16 = 0x7E5D

// kvBuffer uploads a KV cache's values (Poison entries kept as poison) in the cache's type wt.
func (c *checker) kvBuffer(v []float32, wt wgsl.WeightType) *webgpu.Buffer {
	if wt == wgsl.F32 {
		return c.f32(v)
	}
	raw := make([]byte, 2*len(v))
	for i, f := range v {
		h := weights.F32ToF16(f)
		if math.Float32bits(f) == Poison {
			h = PoisonF16
		}
		raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
	}
	return c.keep(c.d.UploadBytes("selftest kv f16", raw))
}

// readKV reads n values of a KV cache of type wt as float32 (f16 poison read as Poison).
func (c *checker) readKV(b *webgpu.Buffer, n int, wt wgsl.WeightType) []float32 {
	if wt == wgsl.F32 {
		return c.readF32(b, n)
	}
	raw, err := c.d.ReadBuffer(b, uint64(2*n))
	c.must(err)
	out := make([]float32, n)
	for i := range out {
		h := uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
		out[i] = weights.F16ToF32(h)
		if h == PoisonF16 {
			out[i] = poisonF32
		}
	}
	return out
}

// roundKV rounds a KV cache's values to what a cache of type wt holds (poison kept).
func roundKV(v []float32, wt wgsl.WeightType) []float32 {
	if wt == wgsl.F32 {
		return v
	}
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = f
		if math.Float32bits(f) != Poison {
			out[i] = weights.F16ToF32(weights.F32ToF16(f))
		}
	}
	return out
}
