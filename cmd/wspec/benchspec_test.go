package main

import (
	"context"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wspec/wspec/spec/engine"
)

func TestParseKs(t *testing.T) {
	got, am, err := parseKs("1-3, 8,adaptive")
	if err != nil || !slices.Equal(got, []int{1, 2, 3, 8, 0}) || am != 0 {
		t.Fatalf("got %v, %d, %v", got, am, err)
	}
	got, am, err = parseKs("2,adaptive:6")
	if err != nil || !slices.Equal(got, []int{2, 0}) || am != 6 {
		t.Fatalf("got %v, %d, %v", got, am, err)
	}
	for _, bad := range []string{"0", "3-1", "99", "x", "1-99", "", "adaptive:0", "adaptive:x", "adaptive:99", "adaptive,adaptive:2"} {
		if _, _, err := parseKs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestNewSpecBenchRefuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.txt")
	os.WriteFile(p, []byte("a\n\nb\nc\n"), 0o644)
	flags := func(prompts string, maxPrompts int, drafters, temps string, tokens int) specBenchFlags {
		return specBenchFlags{dtype: "f32", prompts: prompts, maxPrompts: maxPrompts, drafters: drafters, ks: "4", temps: temps, tokens: tokens}
	}
	f := flags(p, 2, "ngram", "0,0.8", 16)
	f.ks = "adaptive"
	b, err := newSpecBench(f)
	if err != nil || !slices.Equal(b.prompts, []string{"a", "b"}) || b.maxK != 8 || b.adaptiveMax != 8 || len(b.temps) != 2 {
		t.Fatalf("%+v, %v", b, err)
	}
	f.ks = "1,adaptive:4" // adaptive capped apart from the fixed ks
	if b, err = newSpecBench(f); err != nil || b.maxK != 4 || b.adaptiveMax != 4 {
		t.Fatalf("%+v, %v", b, err)
	}
	f.ks = "8,adaptive:2"
	if b, err = newSpecBench(f); err != nil || b.maxK != 8 || b.adaptiveMax != 2 {
		t.Fatalf("%+v, %v", b, err)
	}
	empty := filepath.Join(dir, "e.txt")
	os.WriteFile(empty, []byte("\n \n"), 0o644)
	for _, tc := range []struct{ prompts, drafters, temps, want string }{
		{empty, "ngram", "0", "no prompts"},
		{p, "nope", "0", "unknown mode"},
		{p, "ngram", "-1", "bad temperature"},
		{p, "ngram", "NaN", "bad temperature"},
	} {
		if _, err := newSpecBench(flags(tc.prompts, 0, tc.drafters, tc.temps, 16)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v", tc, err)
		}
	}
	if _, err := newSpecBench(flags(p, 0, "ngram", "0", 0)); err == nil || !strings.Contains(err.Error(), "--tokens 0") {
		t.Errorf("--tokens 0: got %v", err)
	}
	if _, err := newSpecBench(flags(p, -1, "ngram", "0", 16)); err == nil || !strings.Contains(err.Error(), "--max-prompts -1") {
		t.Errorf("--max-prompts -1: got %v", err)
	}
	// --draft-model is one drafter's checkpoint: it needs its mode alone, and then is the one
	// benchmarked.
	d := flags(p, 0, "all", "0", 16)
	d.draftModel = "/some/draft"
	if _, err := newSpecBench(d); err == nil || !strings.Contains(err.Error(), "--draft-model") {
		t.Errorf("--draft-model with all drafters: got %v", err)
	}
	d.drafters = "draft_model"
	if b, err := newSpecBench(d); err != nil || b.draftModel != "/some/draft" {
		t.Errorf("--draft-model with draft_model: %+v, %v", b, err)
	}
	// The run loads that checkpoint, not the shipped drafter: a missing one is an error naming it.
	missing := filepath.Join(dir, "no-such-drafter")
	err = runBench([]string{"--prompts", p, "--drafters", "draft_model", "--draft-model", missing, "--ks", "1", "--temperatures", "0", "--tokens", "2"})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("bench --prompts --draft-model %s: got %v, want an error naming it", missing, err)
	}
	if err := runBench([]string{"--prompts", p, "--speculative-mode", "ngram"}); err == nil || !strings.Contains(err.Error(), "--drafters") {
		t.Errorf("bench --prompts --speculative-mode: got %v", err)
	}
}

// The plot is well-formed SVG with a line per drafter and temperature, and the table has a
// row per benchmark row.
func TestSpecBenchOutputs(t *testing.T) {
	rows := []specBenchRow{
		{Drafter: "ngram", K: "1", SpeedUp: 0.9, MeanAcceptanceLength: 1.2, AcceptancePerPos: []float64{0.2}},
		{Drafter: "ngram", K: "2", SpeedUp: 0.95, MeanAcceptanceLength: 1.3},
		{Drafter: "ngram", K: "adaptive", SpeedUp: 1, MeanAcceptanceLength: 1.1},
		{Drafter: "eagle3", K: "1", Temperature: 0.8, SpeedUp: 1.4, MeanAcceptanceLength: 1.8},
		{Drafter: "eagle3", K: "1", OneHot: true, Temperature: 0.8, SpeedUp: 1.2, MeanAcceptanceLength: 1.6},
	}
	path := filepath.Join(t.TempDir(), "b.svg")
	if err := specBenchSVG(path, rows); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	d := xml.NewDecoder(strings.NewReader(string(b)))
	lines := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			for _, a := range se.Attr {
				if a.Name.Local == "stroke-width" && a.Value == "1.8" { // a series' line
					lines++
				}
			}
		}
	}
	if lines != 6 { // 3 series (one-hot drafts a line of their own) x 2 panels
		t.Errorf("%d series lines, want 6", lines)
	}
	if tab := specBenchTable(rows); strings.Count(tab, "\n") != len(rows)+2 || !strings.Contains(tab, "**1.40x**") ||
		!strings.Contains(tab, "| 1 one-hot |") {
		t.Errorf("table:\n%s", tab)
	}
}

// Over n prompts every arm runs once at every position of a prompt's runs, so no arm always
// runs first (after a cold start) or last, or after the same arm (a suffix tree grows with each).
func TestArmOrderTurns(t *testing.T) {
	const n = 5
	seen := make([][n]int, n) // seen[arm][position]
	for pi := range n {
		o := armOrder(n, pi)
		if s := slices.Sorted(slices.Values(o)); !slices.Equal(s, []int{0, 1, 2, 3, 4}) {
			t.Fatalf("prompt %d: order %v is not the arms once each", pi, o)
		}
		for pos, arm := range o {
			seen[arm][pos]++
		}
	}
	for arm, pos := range seen {
		if pos != [n]int{1, 1, 1, 1, 1} {
			t.Errorf("arm %d ran at positions %v over %d prompts", arm, pos, n)
		}
	}
}

// --one-hot adds each k with one-hot drafts at temperatures above 0 only: greedy drafts are
// one-hot anyway.
func TestBenchArmsOneHot(t *testing.T) {
	b := &specBench{ks: []int{1, 0}, oneHot: true}
	if got := b.arms(0); !slices.Equal(got, []benchArm{{k: 1}, {k: 0}}) {
		t.Errorf("greedy arms %v", got)
	}
	if got := b.arms(0.8); !slices.Equal(got, []benchArm{{k: 1}, {k: 0}, {k: 1, oneHot: true}, {k: 0, oneHot: true}}) {
		t.Errorf("sampled arms %v", got)
	}
	b.oneHot = false
	if got := b.arms(0.8); len(got) != 2 {
		t.Errorf("without --one-hot: %v", got)
	}
}

// driftingEngine answers each generation in a time that only the machine's speed sets, which
// slows down by a tenth at every generation: a plain run makes one token a step, every
// speculative arm two, so every arm's true speed-up is 2x. It records each run's draft length
// (-1: plain).
type driftingEngine struct {
	runs  int
	kinds []int
}

func (d *driftingEngine) Generate(_ context.Context, _ string, o engine.GenerateOptions) (*engine.Result, error) {
	speed := math.Pow(0.9, float64(d.runs))
	d.runs++
	steps, k := 32.0, -1
	if !o.NoSpeculation {
		steps, k = 16, o.NumSpeculativeTokens
	}
	d.kinds = append(d.kinds, k)
	return &engine.Result{Tokens: make([]int, 33), Decode: time.Duration(steps / speed * float64(time.Millisecond))}, nil
}

// Every arm runs between two plain runs of its prompt and is measured against their mean, so
// on a machine slowing down within a prompt's runs arms that decode alike measure alike
// (with one plain run before a prompt's arms and one after, its first arm measured 2.17x
// and its last 1.76x).
func TestSpecBenchArmsBetweenPlainRuns(t *testing.T) {
	b := &specBench{prompts: []string{"a", "b"}, ks: []int{1, 2, 0}, maxK: 5, adaptiveMax: 5, temps: []float32{0}, tokens: 33, log: func(string) {}}
	d := &driftingEngine{}
	rows, err := b.drafter(context.Background(), d, "fake")
	if err != nil {
		t.Fatal(err)
	}
	// prompt 0: arms 0, 1, 2; prompt 1: arms 1, 2, 0 (k 2, adaptive up to 5, k 1).
	if want := []int{-1, 1, -1, 2, -1, 5, -1, -1, 2, -1, 5, -1, 1, -1}; !slices.Equal(d.kinds, want) {
		t.Fatalf("runs %v, want %v (-1: plain)", d.kinds, want)
	}
	for _, r := range rows {
		if len(r.SpeedUps) != 2 {
			t.Errorf("k %s: per-prompt speed-ups %v, want one per prompt", r.K, r.SpeedUps)
		}
		if math.Abs(r.SpeedUp-2) > 0.03 {
			t.Errorf("k %s: %.3fx, want 2x within the drift's curvature", r.K, r.SpeedUp)
		}
	}
}

// A prompt file's lines are prompts, blank ones skipped; a line that starts with a quote is a
// JSON string (newlines inside), and a broken one is an error naming its line. The code-edit
// workload's file reads so.
func TestReadPromptsJSONLines(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.txt")
	if err := os.WriteFile(file, []byte("plain one\n\n\"two\\nlines\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readPrompts(file, 0)
	if err != nil || len(got) != 2 || got[0] != "plain one" || got[1] != "two\nlines" {
		t.Fatalf("%q, %v", got, err)
	}
	if err := os.WriteFile(file, []byte("ok\n\"broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readPrompts(file, 0); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("a broken JSON line: %v", err)
	}
	edits, err := readPrompts("scripts/code-edit-prompts.txt", 0)
	if err != nil || len(edits) != 3 || !strings.Contains(edits[0], "```go\n// Package holdback") {
		t.Fatalf("the code-edit prompts: %d, %v", len(edits), err)
	}
}
