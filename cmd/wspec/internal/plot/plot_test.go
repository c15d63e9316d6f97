package plot

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write makes a well-formed SVG with a path per series, skipping NaN points, and escapes text.
func TestWrite(t *testing.T) {
	one := 1.0
	panels := []Panel{
		{Title: "loss <a>", XLabel: "step", YLabel: "loss", Series: []Series{
			{Name: "train", X: []float64{1, 2, 3}, Y: []float64{3, math.NaN(), 1}},
			{Name: "validation", X: []float64{1, 3}, Y: []float64{3.2, 1.5}, Dashed: true, Dots: true},
		}},
		{Title: "speed-up", XLabel: "k", Series: []Series{{Name: "train", X: []float64{1, 2}, Y: []float64{0.9, 1.2}}},
			XTicks: map[float64]string{1: "1", 2: "A"}, RefY: &one},
	}
	path := filepath.Join(t.TempDir(), "p.svg")
	if err := Write(path, "a & b", panels, "solid: greedy"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	s := string(b)
	if strings.Count(s, `fill="none" stroke-width`) != 3 || !strings.Contains(s, "loss &lt;a&gt;") || strings.Contains(s, "NaN") || !strings.Contains(s, ">A<") {
		t.Fatalf("unexpected SVG:\n%s", s)
	}
}
