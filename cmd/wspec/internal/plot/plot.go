// Package plot draws line charts as self-contained SVG files: one or more panels side by
// side, each with axes, ticks and its series, and one legend. It is wspec's one plotter (the
// drafters' loss curves, the speculation benchmark's panels).
package plot

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// Series is one line of a panel.
type Series struct {
	Name   string
	X, Y   []float64 // NaN and infinite points are skipped
	Color  string    // an SVG colour; default by the series' name (the same in every panel)
	Dashed bool
	Dots   bool // a dot at each point
}

// Panel is one chart.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
	XTicks                map[float64]string // labels at these x (default: 6 evenly spaced numbers)
	RefY                  *float64           // a dotted horizontal line at this y (e.g. 1 for a ratio)
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// Write draws the panels side by side under title into path, with a legend of every series
// name (and note) below them.
func Write(path, title string, panels []Panel, note string) error {
	const W, H, left, right, top, bottom = 480.0, 360.0, 64.0, 16.0, 56.0, 50.0
	var names []string
	color := map[string]string{}
	for _, p := range panels {
		for _, s := range p.Series {
			if _, ok := color[s.Name]; !ok {
				names = append(names, s.Name)
				color[s.Name] = s.Color
				if s.Color == "" {
					color[s.Name] = palette[(len(names)-1)%len(palette)]
				}
			}
		}
	}
	total := W * float64(len(panels))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", total, H+40)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="20" text-anchor="middle" font-size="15">%s</text>`+"\n", total/2, escape(title))
	for i, p := range panels {
		ox := W * float64(i)
		x0, x1, y0, y1 := bounds(p)
		px := func(x float64) float64 { return ox + left + (x-x0)/(x1-x0)*(W-left-right) }
		py := func(y float64) float64 { return H - bottom - (y-y0)/(y1-y0)*(H-top-bottom) }
		fmt.Fprintf(&b, `<text x="%g" y="44" text-anchor="middle" font-size="13">%s</text>`+"\n", ox+W/2, escape(p.Title))
		fmt.Fprintf(&b, `<path d="M%g %g V%g H%g" stroke="black" fill="none"/>`+"\n", ox+left, top, H-bottom, ox+W-right)
		ticks := p.XTicks
		if ticks == nil {
			ticks = map[float64]string{}
			for j := 0; j <= 5; j++ {
				xv := x0 + float64(j)*(x1-x0)/5
				ticks[xv] = tick(xv)
			}
		}
		for xv, label := range ticks {
			fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", px(xv), H-bottom+16, escape(label))
		}
		for j := 0; j <= 5; j++ {
			yv := y0 + float64(j)*(y1-y0)/5
			fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%s</text>`+"\n", ox+left-6, py(yv)+4, tick(yv))
			fmt.Fprintf(&b, `<path d="M%g %g H%g" stroke="#e4e4e4"/>`+"\n", ox+left, py(yv), ox+W-right)
		}
		if p.RefY != nil {
			fmt.Fprintf(&b, `<path d="M%g %g H%g" stroke="#888" stroke-dasharray="2,3"/>`+"\n", ox+left, py(*p.RefY), ox+W-right)
		}
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", ox+(left+W-right)/2, H-14, escape(p.XLabel))
		cy := (top + H - bottom) / 2
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" transform="rotate(-90 %g %g)">%s</text>`+"\n", ox+16, cy, ox+16, cy, escape(p.YLabel))
		for _, s := range p.Series {
			var d strings.Builder
			pen := "M"
			for j := range s.X {
				if bad(s.Y[j]) {
					continue
				}
				fmt.Fprintf(&d, "%s%.1f %.1f ", pen, px(s.X[j]), py(s.Y[j]))
				pen = "L"
				if s.Dots {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(s.X[j]), py(s.Y[j]), color[s.Name])
				}
			}
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="6,4"`
			}
			fmt.Fprintf(&b, `<path d="%s" stroke="%s" fill="none" stroke-width="1.8"%s/>`+"\n", strings.TrimSpace(d.String()), color[s.Name], dash)
		}
	}
	x := left
	for _, n := range names {
		fmt.Fprintf(&b, `<path d="M%g %g h18" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s</text>`+"\n", x, H+22, color[n], x+22, H+26, escape(n))
		x += 30 + 7*float64(len(n))
	}
	if note != "" {
		fmt.Fprintf(&b, `<text x="%g" y="%g">%s</text>`+"\n", x+10, H+26, escape(note))
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// bounds are a panel's axes: its points' range, the y axis from 0 at most, the ticks and
// reference line included.
func bounds(p Panel) (x0, x1, y0, y1 float64) {
	x0, x1, y0, y1 = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range p.Series {
		for j := range s.X {
			if !bad(s.Y[j]) {
				x0, x1 = math.Min(x0, s.X[j]), math.Max(x1, s.X[j])
				y0, y1 = math.Min(y0, s.Y[j]), math.Max(y1, s.Y[j])
			}
		}
	}
	for xv := range p.XTicks {
		x0, x1 = math.Min(x0, xv), math.Max(x1, xv)
	}
	if p.RefY != nil {
		y0, y1 = math.Min(y0, *p.RefY), math.Max(y1, *p.RefY)
	}
	if math.IsInf(x0, 1) {
		x0, x1 = 0, 1
	}
	if math.IsInf(y0, 1) {
		y0, y1 = 0, 1
	}
	y0 = math.Min(y0, 0)
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	return x0, x1, y0, y1 * 1.05
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func tick(v float64) string {
	if a := math.Abs(v); a >= 1000 || (a < 0.01 && a != 0) {
		return fmt.Sprintf("%.3g", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
