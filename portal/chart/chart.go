// Package chart draws the portal's charts as SVG on the server: they show without
// JavaScript, print, and need no library. Each bar or point carries a <title> (the exact value
// on hover), each chart an aria-label, and the page keeps a table of the same numbers beside
// it.
package chart

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
)

// Series is one line or one stack of bars.
type Series struct {
	Label  string
	Class  string     // the CSS class that colours it (market.css): s1, s2, ...
	Values []*float64 // one per day; nil: no value that day (a gap in a line)
}

// Chart is one chart: bars (stacked when several series) or lines.
type Chart struct {
	Title  string
	Days   []string // "2006-01-02", one per value
	Series []Series
	Lines  bool
	Format func(float64) string // a value as the axis and titles say it
	Href   string               // where the chart links (its call log), "" for none
}

const (
	chartW, chartH = 600, 180
	padL, padB     = 64, 24
	padT           = 10
)

func (c Chart) max() float64 {
	m := 0.0
	for i := range c.Days {
		stack := 0.0
		for _, s := range c.Series {
			if v := s.Values[i]; v != nil {
				if c.Lines {
					m = max(m, *v)
				} else {
					stack += *v
				}
			}
		}
		m = max(m, stack)
	}
	if m == 0 {
		m = 1
	}
	return m
}

// SVG draws the chart.
func (c Chart) SVG() template.HTML {
	esc := template.HTMLEscapeString
	var b strings.Builder
	top := c.max()
	plotW, plotH := float64(chartW-padL-8), float64(chartH-padT-padB)
	y := func(v float64) float64 { return float64(padT) + plotH - v/top*plotH }
	n := len(c.Days)
	step := plotW / float64(max(n, 1))
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, esc(c.Title+", last "+fmt.Sprint(n)+" days"))
	// Axis: zero and the top value, the first and last day.
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, y(0), chartW-8, y(0))
	fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, padL, y(top), chartW-8, y(top))
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y(top)+4, esc(c.Format(top)))
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y(0)+4, esc(c.Format(0)))
	if n > 0 {
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d">%s</text>`, padL, chartH-6, esc(c.Days[0]))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, chartW-8, chartH-6, esc(c.Days[n-1]))
	}
	if c.Lines {
		for _, s := range c.Series {
			var pts []string
			flush := func() {
				if len(pts) > 1 {
					fmt.Fprintf(&b, `<polyline class="line %s" points="%s"/>`, s.Class, strings.Join(pts, " "))
				}
				pts = nil
			}
			for i, v := range s.Values {
				if v == nil {
					flush()
					continue
				}
				x := float64(padL) + step*(float64(i)+0.5)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y(*v)))
				fmt.Fprintf(&b, `<circle class="dot %s" cx="%.1f" cy="%.1f" r="2.5"><title>%s</title></circle>`, s.Class, x, y(*v), esc(c.Days[i]+": "+s.Label+" "+c.Format(*v)))
			}
			flush()
		}
	} else {
		for i := range c.Days {
			base := 0.0
			for _, s := range c.Series {
				v := s.Values[i]
				if v == nil || *v == 0 {
					continue
				}
				x := float64(padL) + step*float64(i) + step*0.15
				fmt.Fprintf(&b, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
					s.Class, x, y(base+*v), step*0.7, y(base)-y(base+*v), esc(c.Days[i]+": "+s.Label+" "+c.Format(*v)))
				base += *v
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it went through esc
}

// Legend lists the series with their colours.
func (c Chart) Legend() []Series { return c.Series }

// Values are xs as a series' values, through conv.
func Values[T int | int64](xs []T, conv func(T) float64) []*float64 {
	out := make([]*float64, len(xs))
	for i, x := range xs {
		v := conv(x)
		out[i] = &v
	}
	return out
}

// USD writes micro-USD as the axis and titles say it.
func USD(micro float64) string { return tools.USD(int64(micro)).String() + " USD" }
