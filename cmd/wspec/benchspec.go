package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/weights/chat"
)

// specBench is `wspec bench --prompts FILE`: each drafter, at each k and adaptive, at each
// temperature, over a prompt set, each generation between two plain ones of the same prompt
// and seed (the same text: seeded output does not depend on speculation), so the speed-up is
// measured in the same run on the same tokens, against the machine's speed of that moment.
type specBench struct {
	model, adapter, dtype string
	draftModel            string // the drafter checkpoint of the one mode benchmarked ("": the shipped one)
	prompts               []string
	drafters              []string
	ks                    []int // 0: adaptive (up to adaptiveMax)
	adaptiveMax           int
	maxK                  int // the engine's most drafts: the largest k or adaptiveMax
	temps                 []float32
	oneHot                bool // at T > 0, each k again with one-hot drafts
	chat                  bool // each prompt is a user's message in the model's chat template
	tokens                int
	log                   func(string)
}

// benchArm is one speculative configuration of a drafter's grid.
type benchArm struct {
	k      int  // 0: adaptive (up to adaptiveMax)
	oneHot bool // the drafter proposes its argmax one-hot though the request samples
}

// arms are the grid's configurations at temperature temp.
func (b *specBench) arms(temp float32) []benchArm {
	var out []benchArm
	for _, k := range b.ks {
		out = append(out, benchArm{k: k})
	}
	if b.oneHot && temp > 0 {
		for _, k := range b.ks {
			out = append(out, benchArm{k: k, oneHot: true})
		}
	}
	return out
}

// specBenchRow is one drafter at one k and temperature over the prompt set.
type specBenchRow struct {
	Drafter     string  `json:"drafter"`
	K           string  `json:"k"`                        // "1".."15" or "adaptive"
	OneHot      bool    `json:"one_hot_drafts,omitempty"` // a sampling drafter's argmax, one-hot
	Temperature float32 `json:"temperature"`
	Prompts     int     `json:"prompts"`
	Tokens      int     `json:"tokens"` // generated, all prompts
	// Mean acceptance length counts the bonus (or recovered) token: tokens per verify step.
	MeanAcceptanceLength float64   `json:"mean_acceptance_length"`
	AcceptanceRate       float64   `json:"acceptance_rate"`
	AcceptancePerPos     []float64 `json:"acceptance_per_position"` // of the steps that drafted that far
	TokPerSec            float64   `json:"decode_tok_per_s"`        // median over prompts
	PlainTokPerSec       float64   `json:"plain_decode_tok_per_s"`  // median over the same prompts (of the mean of the plain runs either side)
	SpeedUp              float64   `json:"speedup"`                 // median of the per-prompt ratios
	SpeedUps             []float64 `json:"speedup_per_prompt"`      // each prompt's ratio, in prompt order
	DraftShare           float64   `json:"draft_share"`             // of the decode time, drafting
	StepMs               float64   `json:"step_ms"`                 // mean target step (verify) wall time
}

// specBenchFlags are the flags of a drafter benchmark, as given.
type specBenchFlags struct {
	model, adapter, dtype, draftModel string
	prompts                           string // the prompt file
	maxPrompts                        int
	drafters, ks, temps               string
	tokens                            int
	oneHot, chat                      bool
}

// newSpecBench checks the flags of a drafter benchmark.
func newSpecBench(f specBenchFlags) (*specBench, error) {
	model, adapter, dtype, promptFile, maxPrompts, drafters, ks, temps, tokens := f.model, f.adapter, f.dtype, f.prompts, f.maxPrompts, f.drafters, f.ks, f.temps, f.tokens
	b := &specBench{model: model, adapter: adapter, dtype: dtype, draftModel: f.draftModel, tokens: tokens, oneHot: f.oneHot, chat: f.chat, log: func(s string) { fmt.Fprintln(os.Stderr, s) }}
	switch {
	case tokens < 1:
		return nil, fmt.Errorf("--tokens %d: want at least 1", tokens)
	case maxPrompts < 0:
		return nil, fmt.Errorf("--max-prompts %d: want 0 (all) or more", maxPrompts)
	}
	var err error
	if b.prompts, err = readPrompts(promptFile, maxPrompts); err != nil {
		return nil, err
	}
	var adaptiveMax int
	if b.ks, adaptiveMax, err = parseKs(ks); err != nil {
		return nil, err
	}
	b.maxK = slices.Max(b.ks) // adaptive drafts up to the largest k, else 8, unless adaptive:N
	if b.maxK == 0 {
		b.maxK = 8
	}
	if adaptiveMax > 0 {
		b.adaptiveMax = adaptiveMax
	} else {
		b.adaptiveMax = b.maxK
	}
	b.maxK = max(b.maxK, b.adaptiveMax)
	b.drafters = spec.Names()
	if drafters != "all" {
		b.drafters = nil
		for _, d := range strings.Split(drafters, ",") {
			if d = strings.TrimSpace(d); !slices.Contains(spec.Names(), d) {
				return nil, fmt.Errorf("--drafters: unknown mode %q (%s)", d, strings.Join(spec.Names(), ", "))
			}
			b.drafters = append(b.drafters, d)
		}
	}
	if b.draftModel != "" && len(b.drafters) != 1 {
		return nil, fmt.Errorf("--draft-model %s is one drafter's checkpoint: give its mode alone in --drafters (not %q)", b.draftModel, drafters)
	}
	for _, t := range strings.Split(temps, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 32)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("--temperatures: bad temperature %q", t)
		}
		b.temps = append(b.temps, float32(v))
	}
	return b, nil
}

// readPrompts reads one prompt per non-empty line; a line that starts with a double quote is
// a JSON string, so that a prompt can hold newlines (a source file, a chat template's turns).
func readPrompts(path string, limit int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		p := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(p, `"`) {
			if err := json.Unmarshal([]byte(p), &p); err != nil {
				return nil, fmt.Errorf("%s:%d: a line that starts with a quote is a JSON string: %w", path, line, err)
			}
		}
		if p != "" && (limit <= 0 || len(out) < limit) {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}

// parseKs reads "1-8,adaptive" or "1,2,adaptive:8" (adaptive is 0; adaptiveMax is N of
// adaptive:N, the most it drafts, or 0 where not given).
func parseKs(s string) (ks []int, adaptiveMax int, err error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "adaptive" || strings.HasPrefix(part, "adaptive:"):
			if slices.Contains(out, 0) {
				return nil, 0, fmt.Errorf("--ks: adaptive given twice")
			}
			if n, ok := strings.CutPrefix(part, "adaptive:"); ok {
				k, err := strconv.Atoi(n)
				if err != nil || k < 1 || k > spec.MaxSpeculativeTokens {
					return nil, 0, fmt.Errorf("--ks: bad %q (adaptive:N drafts at most N, 1..%d)", part, spec.MaxSpeculativeTokens)
				}
				adaptiveMax = k
			}
			out = append(out, 0)
		case strings.Contains(part, "-"):
			lo, err1 := strconv.Atoi(strings.SplitN(part, "-", 2)[0])
			hi, err2 := strconv.Atoi(strings.SplitN(part, "-", 2)[1])
			if err1 != nil || err2 != nil || lo < 1 || hi < lo || hi > spec.MaxSpeculativeTokens {
				return nil, 0, fmt.Errorf("--ks: bad range %q", part)
			}
			for k := lo; k <= hi; k++ {
				out = append(out, k)
			}
		default:
			k, err := strconv.Atoi(part)
			if err != nil || k < 1 || k > spec.MaxSpeculativeTokens {
				return nil, 0, fmt.Errorf("--ks: bad k %q (1..%d, adaptive or adaptive:N)", part, spec.MaxSpeculativeTokens)
			}
			out = append(out, k)
		}
	}
	return out, adaptiveMax, nil
}

// run benchmarks every drafter and returns the rows, drafter by drafter.
func (b *specBench) run(ctx context.Context) ([]specBenchRow, error) {
	var rows []specBenchRow
	for _, d := range b.drafters {
		sc := &spec.Config{Mode: d, NumSpeculativeTokens: b.maxK, Model: b.draftModel}
		// each prompt runs plain and speculative: no prefix cache, so both compute it
		e, err := engine.Load(b.model, engine.Options{Adapter: b.adapter, DType: b.dtype, Speculative: sc, NoPrefixCaching: true})
		if err != nil {
			return rows, fmt.Errorf("%s: %w", d, err)
		}
		if b.chat {
			if err := b.renderChat(e); err != nil {
				e.Close()
				return rows, err
			}
		}
		r, err := b.drafter(ctx, e, d)
		e.Close()
		rows = append(rows, r...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// renderChat turns the prompts, once, into user's messages in the model's chat template (the
// one `wspec serve` uses).
func (b *specBench) renderChat(e *engine.Engine) error {
	info := e.Info()
	tpl, err := chat.ForModel(info.Dir, info.ChatTemplate, "", e.Tokenizer())
	if err != nil {
		return err
	}
	for i, p := range b.prompts {
		if b.prompts[i], err = tpl.UserPrompt(p); err != nil {
			return fmt.Errorf("--chat: prompt %d: %w", i+1, err)
		}
	}
	b.chat = false
	return nil
}

// drafter runs one engine's grid: for each temperature and prompt, plain, then each arm
// followed by plain again, so that every arm runs between two plain runs of its prompt and
// its speed-up is over their mean. The arms' order turns by one each prompt. A machine whose
// speed drifts within a prompt's runs (this one's swings by a third within a minute) thus
// favours no arm: with one plain run either side of all the arms, EAGLE's adaptive plan,
// which drafted what k 1 did, step for step, measured 1.03x against k 1's 1.20x.
func (b *specBench) drafter(ctx context.Context, e generator, name string) ([]specBenchRow, error) {
	type acc struct {
		m                spec.Metrics
		tokens           int
		tps, plain, up   []float64
		decode, draftDur time.Duration
	}
	var out []specBenchRow
	for _, temp := range b.temps {
		arms := b.arms(temp)
		accs := make([]acc, len(arms))
		for pi, p := range b.prompts {
			o := engine.GenerateOptions{MaxTokens: b.tokens, Sampling: engine.Sampling{Temperature: temp, Seed: uint64(1000 + pi)}}
			plain := func() (*engine.Result, error) {
				po := o
				po.NoSpeculation, po.NumSpeculativeTokens, po.FixedSpeculation = true, 0, false
				return e.Generate(ctx, p, po)
			}
			prev, err := plain()
			if err != nil {
				return out, err
			}
			for _, i := range armOrder(len(arms), pi) {
				arm, ao := arms[i], o
				ao.NumSpeculativeTokens, ao.FixedSpeculation, ao.OneHotDrafts = arm.k, arm.k > 0, arm.oneHot
				if arm.k == 0 {
					ao.NumSpeculativeTokens = b.adaptiveMax
				}
				r, err := e.Generate(ctx, p, ao)
				if err != nil {
					return out, err
				}
				if temp == 0 && !slices.Equal(r.Tokens, prev.Tokens) {
					return out, fmt.Errorf("%s k=%d: greedy output differs from plain decoding on %q", name, arm.k, p)
				}
				next, err := plain()
				if err != nil {
					return out, err
				}
				a := &accs[i]
				a.m.Add(r.Metrics)
				a.tokens += len(r.Tokens)
				if sp, pl := decodeRate(r), (decodeRate(prev)+decodeRate(next))/2; sp > 0 && pl > 0 {
					a.tps, a.plain, a.up = append(a.tps, sp), append(a.plain, pl), append(a.up, sp/pl)
				}
				a.decode += r.Decode
				a.draftDur += r.Metrics.DraftTime
				prev = next
			}
			b.log(fmt.Sprintf("%s T=%g: prompt %d/%d", name, temp, pi+1, len(b.prompts)))
		}
		for i, arm := range arms {
			a := accs[i]
			row := specBenchRow{Drafter: name, K: strconv.Itoa(arm.k), OneHot: arm.oneHot, Temperature: temp, Prompts: len(b.prompts), Tokens: a.tokens,
				MeanAcceptanceLength: a.m.MeanAcceptanceLength(), AcceptanceRate: a.m.AcceptanceRate(),
				TokPerSec: median(a.tps), PlainTokPerSec: median(a.plain), SpeedUp: median(a.up), SpeedUps: a.up}
			if arm.k == 0 {
				row.K = "adaptive"
			}
			row.AcceptancePerPos = a.m.AcceptanceAt()
			if a.decode > 0 {
				row.DraftShare = float64(a.draftDur) / float64(a.decode)
			}
			if a.m.Steps > 0 {
				row.StepMs = float64(a.m.StepTime.Microseconds()) / 1000 / float64(a.m.Steps)
			}
			out = append(out, row)
		}
	}
	return out, nil
}

// generator is the engine as the benchmark uses it (a fake in its tests).
type generator interface {
	Generate(ctx context.Context, prompt string, o engine.GenerateOptions) (*engine.Result, error)
}

// armOrder is the order of n arms for prompt pi: 0..n-1 turned by pi.
func armOrder(n, pi int) []int {
	o := make([]int, n)
	for j := range o {
		o[j] = (j + pi) % n
	}
	return o
}

// decodeRate is a result's decode tokens per second (the first token is the prefill's).
func decodeRate(r *engine.Result) float64 {
	if len(r.Tokens) < 2 || r.Decode <= 0 {
		return 0
	}
	return float64(len(r.Tokens)-1) / r.Decode.Seconds()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// specBenchTable formats the rows as a Markdown table.
func specBenchTable(rows []specBenchRow) string {
	var sb strings.Builder
	sb.WriteString("| drafter | T | k | mean acceptance length | acceptance | per position | decode tok/s | plain tok/s | speed-up | drafting | step ms |\n")
	sb.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		pos := make([]string, len(r.AcceptancePerPos))
		for i, p := range r.AcceptancePerPos {
			pos[i] = fmt.Sprintf("%.2f", p)
		}
		k := r.K
		if r.OneHot {
			k += " one-hot"
		}
		fmt.Fprintf(&sb, "| %s | %g | %s | %.2f | %.0f%% | %s | %.1f | %.1f | **%.2fx** | %.0f%% | %.1f |\n", r.Drafter, r.Temperature, k,
			r.MeanAcceptanceLength, 100*r.AcceptanceRate, strings.Join(pos, " "), r.TokPerSec, r.PlainTokPerSec, r.SpeedUp,
			100*r.DraftShare, r.StepMs)
	}
	return sb.String()
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
