package chart_test

import (
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/portal/chart"
)

func v(f float64) *float64 { return &f }

// svgElems parses the chart as XML (it must be well formed to render) and returns its
// elements by name, with their attributes and text.
func svgElems(t *testing.T, svg string) map[string][]map[string]string {
	t.Helper()
	out := map[string][]map[string]string{}
	d := xml.NewDecoder(strings.NewReader(svg))
	var open []map[string]string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("the SVG is not well formed: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			m := map[string]string{}
			for _, a := range e.Attr {
				m[a.Name.Local] = a.Value
			}
			out[e.Name.Local] = append(out[e.Name.Local], m)
			open = append(open, m)
		case xml.CharData:
			if len(open) > 0 {
				open[len(open)-1]["text"] += string(e)
			}
		case xml.EndElement:
			open = open[:len(open)-1]
		}
	}
}

func TestBarsStackAndSayTheirValues(t *testing.T) {
	c := chart.Chart{Title: "Spend <by day>", Days: []string{"2026-11-01", "2026-11-02", "2026-11-03"}, Format: chart.USD,
		Series: []chart.Series{
			{Label: "partner", Class: "s1", Values: []*float64{v(1_000_000), nil, v(500_000)}},
			{Label: "platform", Class: "s2", Values: []*float64{v(1_000_000), v(0), v(500_000)}},
		}}
	e := svgElems(t, string(c.SVG()))
	if got := e["svg"][0]["aria-label"]; got != "Spend <by day>, last 3 days" {
		t.Errorf("aria-label %q", got)
	}
	// A day with nothing draws no bar: four bars, each titled with its day, series and value.
	if len(e["rect"]) != 4 {
		t.Fatalf("%d bars, want 4 (none for a missing or zero value)", len(e["rect"]))
	}
	titles := []string{}
	for _, tt := range e["title"] {
		titles = append(titles, tt["text"])
	}
	if want := "2026-11-01: partner 1 USD"; !strings.Contains(strings.Join(titles, "|"), want) {
		t.Errorf("titles %q lack %q", titles, want)
	}
	// Stacked: the first day's two bars are as tall as each other and the second sits on the
	// first (its bottom is the first's top); the top tick is the tallest stack, 2 USD.
	a, b := e["rect"][0], e["rect"][1]
	if a["height"] != b["height"] || a["y"] == b["y"] {
		t.Errorf("the first day's bars are not stacked: %v %v", a, b)
	}
	ticks := []string{}
	for _, tt := range e["text"] {
		ticks = append(ticks, tt["text"])
	}
	if !strings.Contains(strings.Join(ticks, "|"), "2 USD") {
		t.Errorf("ticks %q lack the top of the tallest stack, 2 USD", ticks)
	}
}

func TestLinesBreakWhereADayHasNoValue(t *testing.T) {
	c := chart.Chart{Title: "Latency", Days: []string{"d1", "d2", "d3", "d4", "d5"}, Lines: true,
		Format: func(f float64) string { return strconv.Itoa(int(f)) + " ms" },
		Series: []chart.Series{{Label: "p50", Class: "s1", Values: []*float64{v(10), v(20), nil, v(30), v(40)}}}}
	e := svgElems(t, string(c.SVG()))
	if len(e["polyline"]) != 2 {
		t.Fatalf("%d line segments, want 2 (the missing day breaks the line)", len(e["polyline"]))
	}
	if len(e["circle"]) != 4 {
		t.Errorf("%d points, want 4 (one per day with a value)", len(e["circle"]))
	}
}
