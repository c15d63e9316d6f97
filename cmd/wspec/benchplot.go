package main

import (
	"math"
	"strconv"

	"github.com/wspec/wspec/cmd/wspec/internal/plot"
)

// specBenchSVG writes two panels side by side: the speed-up over plain decoding and the mean
// acceptance length against k, one line per drafter and temperature (solid: greedy, dashed:
// sampled; a sampling drafter's one-hot baseline is a line of its own); adaptive k is the point
// past the largest k ("A").
func specBenchSVG(path string, rows []specBenchRow) error {
	maxK := 1.0
	for _, r := range rows {
		if k, err := strconv.Atoi(r.K); err == nil {
			maxK = math.Max(maxK, float64(k))
		}
	}
	type key struct {
		drafter string
		temp    float32
		oneHot  bool
	}
	var order []key
	up, mal := map[key]*plot.Series{}, map[key]*plot.Series{}
	for _, r := range rows {
		k := key{r.Drafter, r.Temperature, r.OneHot}
		if up[k] == nil {
			name := r.Drafter
			if r.OneHot {
				name += " one-hot"
			}
			order = append(order, k)
			up[k] = &plot.Series{Name: name, Dashed: r.Temperature > 0, Dots: true}
			mal[k] = &plot.Series{Name: name, Dashed: r.Temperature > 0, Dots: true}
		}
		x := maxK + 1 // adaptive
		if kk, err := strconv.Atoi(r.K); err == nil {
			x = float64(kk)
		}
		up[k].X, up[k].Y = append(up[k].X, x), append(up[k].Y, r.SpeedUp)
		mal[k].X, mal[k].Y = append(mal[k].X, x), append(mal[k].Y, r.MeanAcceptanceLength)
	}
	ticks := map[float64]string{maxK + 1: "A"}
	for k := 1.0; k <= maxK; k++ {
		ticks[k] = strconv.Itoa(int(k))
	}
	one := 1.0
	panels := []plot.Panel{
		{Title: "speed-up over plain decoding", XLabel: "k (A: adaptive)", XTicks: ticks, RefY: &one},
		{Title: "mean acceptance length (tokens per step)", XLabel: "k (A: adaptive)", XTicks: ticks, RefY: &one},
	}
	for _, k := range order {
		panels[0].Series = append(panels[0].Series, *up[k])
		panels[1].Series = append(panels[1].Series, *mal[k])
	}
	return plot.Write(path, "speculative decoding by drafter and draft length", panels, "solid: temperature 0, dashed: sampled")
}
