package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// specBenchSVG writes two panels side by side: the speed-up over plain decoding and the mean
// acceptance length against k, one line per drafter and temperature (solid: greedy, dashed:
// sampled); adaptive k is the point past k = 8 ("A").
func specBenchSVG(path string, rows []specBenchRow) error {
	const w, h, pad = 460, 320, 50
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	type series struct {
		name string
		temp float32
		x    []float64
		up   []float64
		mal  []float64
	}
	var ss []*series
	find := func(d string, t float32) *series {
		for _, s := range ss {
			if s.name == d && s.temp == t {
				return s
			}
		}
		s := &series{name: d, temp: t}
		ss = append(ss, s)
		return s
	}
	maxK := 1.0
	for _, r := range rows {
		s := find(r.Drafter, r.Temperature)
		x := 0.0
		if k, err := strconv.Atoi(r.K); err == nil {
			x = float64(k)
			maxK = math.Max(maxK, x)
		}
		s.x, s.up, s.mal = append(s.x, x), append(s.up, r.SpeedUp), append(s.mal, r.MeanAcceptanceLength)
	}
	for _, s := range ss { // adaptive after the largest k
		for i := range s.x {
			if s.x[i] == 0 {
				s.x[i] = maxK + 1
			}
		}
	}
	var drafters []string
	for _, s := range ss {
		if !slices.Contains(drafters, s.name) {
			drafters = append(drafters, s.name)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", 2*w, h+40)
	sb.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	panel := func(x0 float64, title string, val func(*series) []float64, ref float64) {
		top := 0.0
		for _, s := range ss {
			for _, v := range val(s) {
				top = math.Max(top, v)
			}
		}
		top = math.Max(math.Ceil(top*1.1*4)/4, ref*1.2)
		px := func(k float64) float64 { return x0 + pad + (k-1)/(maxK)*(w-2*pad) }
		py := func(v float64) float64 { return float64(h) - pad + 10 - v/top*(h-2*pad) }
		fmt.Fprintf(&sb, `<text x="%g" y="20" font-size="14">%s</text>`+"\n", x0+pad, title)
		fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", px(1), py(0), px(maxK+1), py(0))
		fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", px(1), py(0), px(1), py(top))
		fmt.Fprintf(&sb, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#999" stroke-dasharray="2,3"/>`+"\n", px(1), py(ref), px(maxK+1), py(ref))
		for k := 1.0; k <= maxK+1; k++ {
			label := strconv.Itoa(int(k))
			if k == maxK+1 {
				label = "A"
			}
			fmt.Fprintf(&sb, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", px(k), py(0)+16, label)
		}
		for i := 0; i <= 4; i++ {
			v := top * float64(i) / 4
			fmt.Fprintf(&sb, `<text x="%g" y="%g" text-anchor="end">%.2g</text>`+"\n", px(1)-6, py(v)+4, v)
		}
		fmt.Fprintf(&sb, `<text x="%g" y="%g" text-anchor="middle">k (A: adaptive)</text>`+"\n", x0+float64(w)/2, py(0)+32)
		for _, s := range ss {
			c := colors[slices.Index(drafters, s.name)%len(colors)]
			dash := ""
			if s.temp > 0 {
				dash = ` stroke-dasharray="6,4"`
			}
			var pts []string
			for i, x := range s.x {
				if x <= maxK {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x), py(val(s)[i])))
				}
				fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(x), py(val(s)[i]), c)
			}
			fmt.Fprintf(&sb, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), c, dash)
		}
	}
	panel(0, "speed-up over plain decoding", func(s *series) []float64 { return s.up }, 1)
	panel(w, "mean acceptance length (tokens per step)", func(s *series) []float64 { return s.mal }, 1)
	for i, d := range drafters {
		fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="12" height="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			pad+i*120, h+22, colors[i%len(colors)], pad+i*120+16, h+27, d)
	}
	fmt.Fprintf(&sb, `<text x="%d" y="%d">solid: temperature 0, dashed: sampled</text>`+"\n", pad+len(drafters)*120, h+27)
	sb.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}
