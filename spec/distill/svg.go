package distill

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// Series is one line of a plot.
type Series struct {
	Name  string
	X, Y  []float64
	Color string // an SVG colour; default by position
}

// WriteSVG writes a line plot of series (NaN points skipped) with axes, ticks and a legend,
// as a self-contained SVG file.
func WriteSVG(path, title, xlabel, ylabel string, series []Series) error {
	const W, H, left, right, top, bottom = 720.0, 420.0, 70.0, 20.0, 40.0, 50.0
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := range s.X {
			if math.IsNaN(s.Y[i]) || math.IsInf(s.Y[i], 0) {
				continue
			}
			x0, x1 = math.Min(x0, s.X[i]), math.Max(x1, s.X[i])
			y0, y1 = math.Min(y0, s.Y[i]), math.Max(y1, s.Y[i])
		}
	}
	if math.IsInf(x0, 1) {
		x0, x1, y0, y1 = 0, 1, 0, 1
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	y0 = math.Min(y0, 0)
	px := func(x float64) float64 { return left + (x-x0)/(x1-x0)*(W-left-right) }
	py := func(y float64) float64 { return H - bottom - (y-y0)/(y1-y0)*(H-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%g" y="22" text-anchor="middle" font-size="15">%s</text>`+"\n", W/2, escape(title))
	fmt.Fprintf(&b, `<path d="M%g %g V%g H%g" stroke="black" fill="none"/>`+"\n", left, top, H-bottom, W-right)
	for i := 0; i <= 5; i++ {
		xv, yv := x0+float64(i)*(x1-x0)/5, y0+float64(i)*(y1-y0)/5
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", px(xv), H-bottom+16, tick(xv))
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%s</text>`+"\n", left-6, py(yv)+4, tick(yv))
		fmt.Fprintf(&b, `<path d="M%g %g H%g" stroke="#ddd"/>`+"\n", left, py(yv), W-right)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", (left+W-right)/2, H-12, escape(xlabel))
	fmt.Fprintf(&b, `<text x="16" y="%g" text-anchor="middle" transform="rotate(-90 16 %g)">%s</text>`+"\n", (top+H-bottom)/2, (top+H-bottom)/2, escape(ylabel))
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}
	for i, s := range series {
		c := s.Color
		if c == "" {
			c = colors[i%len(colors)]
		}
		var d strings.Builder
		pen := "M"
		for j := range s.X {
			if math.IsNaN(s.Y[j]) || math.IsInf(s.Y[j], 0) {
				continue
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", pen, px(s.X[j]), py(s.Y[j]))
			pen = "L"
		}
		fmt.Fprintf(&b, `<path d="%s" stroke="%s" fill="none" stroke-width="1.5"/>`+"\n", strings.TrimSpace(d.String()), c)
		ly := top + 8 + 16*float64(i)
		fmt.Fprintf(&b, `<path d="M%g %g h18" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s</text>`+"\n", W-right-150, ly, c, W-right-126, ly+4, escape(s.Name))
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func tick(v float64) string {
	if a := math.Abs(v); a >= 1000 || (a < 0.01 && a != 0) {
		return fmt.Sprintf("%.3g", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// CurveSeries turns a loss curve into plot lines: the training loss (smoothed over a window
// of about 1% of the steps) and the validation loss.
func CurveSeries(curve []Point) []Series {
	tr, va := Series{Name: "train (smoothed)"}, Series{Name: "validation"}
	win := max(1, len(curve)/100)
	var sum float64
	for i, p := range curve {
		sum += p.Loss
		if i >= win {
			sum -= curve[i-win].Loss
		}
		tr.X, tr.Y = append(tr.X, float64(p.Step+1)), append(tr.Y, sum/float64(min(i+1, win)))
		if !math.IsNaN(p.Val) {
			va.X, va.Y = append(va.X, float64(p.Step+1)), append(va.Y, p.Val)
		}
	}
	return []Series{tr, va}
}
