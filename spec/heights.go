package spec

import "sort"

// What a one-block step of each height costs, as the plan prices it: measured where stepped
// often lately, between two such heights along the line through them, and otherwise from the
// cost model's line with floors and a cap taken from the heights measured.

// heightPrices are the measured times of one-block steps by height, where stepped lately
// (their means not faded below minFitWeight), lowest height first.
type heightPrices []heightPrice

type heightPrice struct {
	h int     // rows the block computes
	t float64 // seconds
	w float64 // the mean's weight: about how many of the last 20 steps had this height
}

func (c *CostModel) heightPrices() heightPrices {
	var hp heightPrices
	for h, e := range c.byHeight {
		if e.weight >= minFitWeight {
			hp = append(hp, heightPrice{h, e.mean, e.weight})
		}
	}
	sort.Slice(hp, func(i, j int) bool { return hp[i].h < hp[j].h })
	return hp
}

// price is a one-block step of height h. Among the heights stepped often lately (a weight of
// trustBlock), each priced at least as every lower one: h's own time, or between two of them
// the line through the two either side. Otherwise its measured time, else the line; never below
// a lower height's measured time, nor below the highest lower height stepped often lately plus,
// for each row past it, what a row added between it and the next such height (the line's slope
// without one); never above a higher height's time.
//
// Why not the line alone: it is fitted over every row count, prompt chunks' included, so
// between heights it can be far off (a second row priced at 1.5 times what it adds) and above
// the heights stepped lately it can make rows nearly free. A height stepped once or twice
// lately may hold a busy minute's time, so it neither prices a height stepped often nor stands
// between two. docs/speculative.md ("The planner") has the runs that showed each.
func (hp heightPrices) price(h int, line, perRow float64) float64 {
	var below, above *heightPrice // the nearest heights stepped often either side of h
	run := 0.0
	for i := range hp {
		p := hp[i]
		if p.w < trustBlock {
			continue
		}
		run = max(run, p.t)
		p.t = run
		switch {
		case p.h == h:
			return p.t
		case p.h < h:
			below = &p
		case above == nil:
			above = &p
		}
	}
	if below != nil && above != nil {
		return below.t + (above.t-below.t)*float64(h-below.h)/float64(above.h-below.h)
	}
	t, over := line, -1
	var trusted []heightPrice // the lower heights stepped often, highest first
	for i := len(hp) - 1; i >= 0; i-- {
		switch p := hp[i]; {
		case p.h > h:
			over = i
		case p.h == h: // before any lower height: the measured time replaces the line
			t = p.t
		default:
			t = max(t, p.t)
			if p.w >= trustBlock {
				trusted = append(trusted, p)
			}
		}
	}
	if len(trusted) > 0 {
		a, slope := trusted[0], perRow
		if len(trusted) > 1 {
			b := trusted[1]
			slope = (a.t - b.t) / float64(a.h-b.h)
		}
		t = max(t, a.t+slope*float64(h-a.h))
	}
	if over >= 0 {
		ceil := 0.0 // a higher height's time, at least every height's below it
		for _, p := range hp[:over+1] {
			ceil = max(ceil, p.t)
		}
		t = min(t, ceil)
	}
	return t
}
