package engine

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/wspec/wspec/weights/quant"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

// Memory planning, as vLLM plans it: the weights take what they take, and the KV cache gets
// a budget (explicit, or a share of the adapter's memory less the weights and the
// activations); the context a sequence gets (max_model_len) is the model's unless one full
// sequence would not fit in that budget, when it is reduced, with a note saying why. It is
// decided from config.json and the adapter before any weight is read, so a model that cannot
// fit at all is refused with the numbers.

// Defaults of the memory plan.
const (
	// DefaultGPUMemoryUtilization is the share of a GPU's memory the engine plans to use
	// (vLLM's --gpu-memory-utilization default).
	DefaultGPUMemoryUtilization = 0.9
	// MaxPages bounds Options.Pages: 2^24 pages of 16 tokens, 268 million tokens (more than
	// any device holds; beyond it the budget's arithmetic would overflow).
	MaxPages = 1 << 24
	// DefaultCPUKVCacheMemory is the KV cache of a CPU adapter (lavapipe), whose memory is the
	// host's, shared with everything else: vLLM's CPU backend's default KV space.
	DefaultCPUKVCacheMemory = 4 << 30
	pageSize                = model.DefaultPageSize
)

// MemoryPlan is how the engine sized the model's memory.
type MemoryPlan struct {
	DeviceMemory     int64  // bytes the adapter offers (0: unknown)
	DeviceMemoryFrom string // where that figure comes from
	WeightBytes      int64  // the weights, as stored on the device
	ActivationBytes  int64  // the activations and the sampler's buffers, at most
	KVDType          string // f32 or f16
	KVBytesPerToken  int64  // every layer's K and V of one token
	KVBudget         int64  // bytes for the KV cache, before the binding limit
	DrafterBound     bool   // the drafter's KV cache binding bounded the pages
	KVBytes          int64  // the KV cache allocated: Pages x PageSize x KVBytesPerToken
	Pages, PageSize  int
	ModelMaxLen      int    // the model's context (config.json)
	MaxModelLen      int    // the context each sequence gets
	Note             string // why MaxModelLen is below ModelMaxLen ("" when it is not)
}

func (p MemoryPlan) String() string {
	gib := func(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }
	mem := "unknown"
	if p.DeviceMemory > 0 {
		mem = gib(p.DeviceMemory) + " (" + p.DeviceMemoryFrom + ")"
	}
	s := fmt.Sprintf("context %d tokens; KV cache %s in %s (%d pages of %d tokens, %d KiB a token); weights %s; device memory %s",
		p.MaxModelLen, gib(p.KVBytes), p.KVDType, p.Pages, p.PageSize, p.KVBytesPerToken>>10, gib(p.WeightBytes), mem)
	if p.Note != "" {
		s += "; " + p.Note
	}
	return s
}

// planMemory sizes the KV cache of a model of configuration cfg with weights of type wt (those
// src keeps quantized in their own) on d, for the options (validated here: memory flags,
// max_model_len, KV dtype), beside a drafter that needs drafter (its KV cache mirrors the
// target's pages and must fit a storage binding too).
func planMemory(cfg *weights.Config, src weights.TensorSource, wt wgsl.WeightType, d *runtime.Device, o Options, maxSeqs, maxDraft int, drafter spec.Needs) (MemoryPlan, wgsl.WeightType, error) {
	p := MemoryPlan{PageSize: pageSize, ModelMaxLen: cfg.MaxSeq}
	kvType, err := kvDType(o.KVCacheDType, wt, d)
	if err != nil {
		return p, 0, err
	}
	p.KVDType = kvType.String()
	kvWidth := cfg.NKVHeads * cfg.HeadDim
	perLayer := int64(model.KVBytesPerToken(kvWidth, kvType)) // one layer's K (or V)
	p.KVBytesPerToken = 2 * int64(cfg.NLayers) * perLayer
	p.WeightBytes = weightBytes(cfg, src, wt)
	p.ActivationBytes = activationBytes(cfg, maxSeqs, cmp.Or(o.MaxNumBatchedTokens, 128))
	p.DeviceMemory, p.DeviceMemoryFrom = deviceMemory(d)
	want := cfg.MaxSeq
	switch u := o.GPUMemoryUtilization; {
	case o.MaxModelLen < 0 || o.MaxModelLen > cfg.MaxSeq:
		return p, 0, invalid("max_model_len", "max_model_len %d: want 1..%d (the model's context)", o.MaxModelLen, cfg.MaxSeq)
	case o.KVCacheMemory < 0:
		return p, 0, invalid("kv_cache_memory", "kv_cache_memory %d: want 0 (planned) or more bytes", o.KVCacheMemory)
	case u != u || u < 0 || u > 1:
		return p, 0, invalid("gpu_memory_utilization", "gpu_memory_utilization %v: want a share in (0, 1]", u)
	case o.MaxModelLen > 0:
		want = o.MaxModelLen
	}
	util := o.GPUMemoryUtilization
	if util == 0 {
		util = DefaultGPUMemoryUtilization
	}
	cpu := d.Adapter.Info.TypeName == "cpu"
	switch {
	case o.KVCacheMemory > 0:
		p.KVBudget = o.KVCacheMemory
	case o.Pages > 0:
		p.KVBudget = int64(o.Pages) * int64(pageSize) * p.KVBytesPerToken
	case p.DeviceMemory > 0:
		room := int64(util*float64(p.DeviceMemory)) - p.WeightBytes - p.ActivationBytes
		if room <= 0 {
			return p, 0, fmt.Errorf("%w: the model does not fit: its weights take %s and its activations %s, and %.0f%% of the device's %s (%s) is %s; KV takes %d KiB a token",
				ErrNoMemory, gibs(p.WeightBytes), gibs(p.ActivationBytes), 100*util, gibs(p.DeviceMemory), p.DeviceMemoryFrom,
				gibs(int64(util*float64(p.DeviceMemory))), p.KVBytesPerToken>>10)
		}
		p.KVBudget = room
		if cpu && o.GPUMemoryUtilization == 0 {
			p.KVBudget = min(room, DefaultCPUKVCacheMemory)
		}
	default: // unknown memory: two full contexts, as before planning
		p.KVBudget = 2 * int64(want) * p.KVBytesPerToken
	}
	// More than every sequence's full context is of no use but to the prefix cache.
	p.KVBudget = min(p.KVBudget, int64(maxSeqs)*int64(want+maxDraft+pageSize)*p.KVBytesPerToken)
	tokens := p.KVBudget / p.KVBytesPerToken
	// One layer's K (or V) is one storage binding and one buffer; so is the drafter's, which
	// holds as many tokens and up to a few pages a sequence more (its drafts).
	limit := min(d.Limits.MaxStorageBufferBindingSize, d.Limits.MaxBufferSize)
	bound := int64(limit) / perLayer
	if drafter.KVWidth > 0 {
		t := kvType
		if drafter.KVF32 {
			t = wgsl.F32
		}
		extra := int64(maxSeqs) * int64(pageSize) * int64(2+(maxDraft+pageSize-1)/pageSize)
		if db := int64(limit)/int64(model.KVBytesPerToken(drafter.KVWidth, t)) - extra; db < bound {
			bound, p.DrafterBound = max(db, 0), true
		}
	}
	if bound < tokens {
		tokens = bound
	}
	p.Pages = int(tokens / pageSize)
	p.KVBytes = int64(p.Pages*pageSize) * p.KVBytesPerToken
	fits := p.Pages*pageSize - maxDraft - 1 // the longest sequence the pages hold (with its drafts)
	switch {
	case want <= fits:
		p.MaxModelLen = want
	case o.MaxModelLen > 0:
		return p, 0, fmt.Errorf("%w: max_model_len %d needs %s of KV cache (%d KiB a token), the budget holds %d tokens (%s)",
			ErrNoMemory, want, gibs(int64(want+maxDraft+1)*p.KVBytesPerToken), p.KVBytesPerToken>>10, fits, p.budgetReason(bound, tokens))
	case fits < pageSize:
		return p, 0, fmt.Errorf("%w: not one page of KV cache fits: %s; KV takes %d KiB a token", ErrNoMemory, p.budgetReason(bound, tokens), p.KVBytesPerToken>>10)
	default:
		p.MaxModelLen = fits / pageSize * pageSize
		hint := "--max-model-len, --kv-cache-memory or --gpu-memory-utilization"
		if kvType == wgsl.F32 && d.HasF16 {
			hint = "--max-model-len, --kv-cache-memory, --gpu-memory-utilization or --kv-cache-dtype f16"
		}
		p.Note = fmt.Sprintf("the model's context of %d tokens reduced to %d: %s (set %s)",
			want, p.MaxModelLen, p.budgetReason(bound, tokens), hint)
	}
	return p, kvType, nil
}

// budgetReason says what bounded the KV cache.
func (p MemoryPlan) budgetReason(bound, tokens int64) string {
	if tokens == bound && bound < p.KVBudget/p.KVBytesPerToken {
		if p.DrafterBound {
			return fmt.Sprintf("the drafter's K cache is one storage binding, at most %d tokens on this adapter", bound)
		}
		return fmt.Sprintf("one layer's K cache is one storage binding, at most %d tokens on this adapter", bound)
	}
	return fmt.Sprintf("the KV budget is %s", gibs(p.KVBudget))
}

func gibs(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// ErrNoMemory is wrapped by the errors of a model that does not fit the memory planned.
var ErrNoMemory = fmt.Errorf("not enough memory")

// kvDType is the KV cache's type for --kv-cache-dtype: auto is the weights' (f16 only where
// the device has shader-f16).
func kvDType(s string, wt wgsl.WeightType, d *runtime.Device) (wgsl.WeightType, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		if wt == wgsl.F16 && d.HasF16 {
			return wgsl.F16, nil
		}
		return wgsl.F32, nil
	case "f32", "float32":
		return wgsl.F32, nil
	case "f16", "float16", "half":
		if !d.HasF16 {
			return 0, invalid("kv_cache_dtype", "kv_cache_dtype f16: the adapter has no shader-f16")
		}
		return wgsl.F16, nil
	}
	return 0, invalid("kv_cache_dtype", "kv_cache_dtype %q: want auto, f16 or f32", s)
}

// weightType is the weights' type on the device for --dtype: auto is f16 when the checkpoint
// stores its matrices in 16 bits (F16 or BF16) and the adapter has shader-f16, else f32, as
// vLLM's auto keeps a model's half precision.
func weightType(s string, cfg *weights.Config, src weights.TensorSource, d *runtime.Device) (wgsl.WeightType, error) {
	switch s {
	case "f32":
		return wgsl.F32, nil
	case "f16":
		if !d.HasF16 {
			return 0, invalid("dtype", "dtype f16: the adapter has no shader-f16")
		}
		return wgsl.F16, nil
	}
	if !d.HasF16 {
		return wgsl.F32, nil
	}
	for _, sp := range cfg.ExpectedTensors() {
		if len(sp.Shape) < 2 {
			continue // norms and biases stay f32
		}
		rows, cols, bytes, err := src.Shape(sp.Name)
		if err != nil {
			return 0, err
		}
		if qs, ok := src.(weights.QuantSource); ok {
			if st, err := qs.StoredType(sp.Name); err == nil && quant.IsQuantized(st) {
				continue // stays quantized; what it falls back to may be f16
			}
		}
		if bytes != 2*int64(rows)*int64(cols) { // F32 storage (or anything not 16-bit)
			return wgsl.F32, nil
		}
	}
	return wgsl.F16, nil
}

// weightBytes is what a model's weights take on the device: matrices in type wt, or in their
// quantized type when src keeps them quantized (src nil: all in wt; rows padded as the device
// lays them out), vectors in f32.
func weightBytes(c *weights.Config, src weights.TensorSource, wt wgsl.WeightType) int64 {
	elem := int64(4)
	if wt == wgsl.F16 {
		elem = 2
	}
	qs, _ := src.(weights.QuantSource)
	var n int64
	for _, sp := range c.ExpectedTensors() {
		if len(sp.Shape) < 2 {
			n += 4 * int64(sp.Shape[0])
			continue
		}
		b := elem * int64(sp.Shape[0]) * int64(sp.Shape[1])
		if qs != nil {
			if st, err := qs.StoredType(sp.Name); err == nil && quant.IsQuantized(st) {
				rows, k, fileBytes, _ := qs.Shape(sp.Name)
				b = fileBytes
				if qt, ok := runtime.QuantType(st); ok { // as the device lays it out
					b = runtime.LinearBytes(rows, k, qt)
				}
			}
		}
		n += b
	}
	return n
}

// activationBytes bounds the step's activations and the sampler's buffers (rows a step:
// model.Options' default 128 or --max-num-batched-tokens; 64 sampled rows).
func activationBytes(c *weights.Config, maxSeqs, rows int) int64 {
	const logitRows = 64
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	act := int64(rows * (c.Dim + q + 2*kv + q + 2*c.HiddenDim))
	sampler := int64(2 * logitRows * c.Vocab)
	return 4 * (act + sampler + int64(maxSeqs*c.MaxSeq))
}

// deviceMemory is the memory the adapter offers and where the figure comes from: its largest
// device-local heap, or for a CPU adapter the host memory available now (/proc/meminfo).
func deviceMemory(d *runtime.Device) (int64, string) {
	info := d.Adapter.Info
	var heap int64
	for _, h := range info.MemoryHeaps {
		if h.DeviceLocal && int64(h.Size) > heap {
			heap = int64(h.Size)
		}
	}
	if info.TypeName == "cpu" {
		if avail := memAvailable(); avail > 0 && (heap == 0 || avail < heap) {
			return avail, "the host memory available"
		}
	}
	if heap > 0 {
		return heap, "the adapter's largest device-local heap"
	}
	return 0, ""
}

// memAvailable is MemAvailable of /proc/meminfo in bytes (0 where there is none).
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
