package report

import (
	"fmt"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/units"
)

// treeNode is a treemap item: echarts reads name, value and children and
// keeps the rest (path, blocks) for the tooltip.
type treeNode struct {
	Name     string      `json:"name"`
	Value    int64       `json:"value"`
	Path     string      `json:"path,omitempty"`
	Blocks   int         `json:"blocks,omitempty"`
	Children []*treeNode `json:"children,omitempty"`
}

func toTreeNode(n *attribution.TreeNode) *treeNode {
	name, path := treeNodeText(n)
	out := &treeNode{Name: clip(name, 80), Value: n.Bytes, Path: clip(path, 160), Blocks: n.Count}
	for _, c := range n.Children {
		out.Children = append(out.Children, toTreeNode(c))
	}
	return out
}

// treeNodeText is a call tree node's name and its longer description.
func treeNodeText(n *attribution.TreeNode) (name, path string) {
	switch n.Kind {
	case attribution.TreeSelf:
		return "(self)", "allocated in " + n.Path + " itself"
	case attribution.TreeSmaller:
		return fmt.Sprintf("(%d smaller)", n.Smaller),
			fmt.Sprintf("%d smaller callees, each under %.1f%% of the total or past the %d-node limit", n.Smaller, 100*n.MinShare, n.MaxNodes)
	case attribution.TreeRoot:
		return "all", "allocated at " + n.Name
	}
	return n.Name, n.Path
}

// treeChart is the peak's call tree of counted frames as a treemap; a click
// zooms into a node, the breadcrumb goes back.
func treeChart(prefix string, root *attribution.TreeNode) chartView {
	c := charts.NewTreeMap()
	c.SetGlobalOptions(append(common(prefix+"-tree"), charts.WithTooltipOpts(opts.Tooltip{Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}))...)
	data := []*treeNode{}
	for _, ch := range root.Children {
		data = append(data, toTreeNode(ch))
	}
	levels := []opts.TreeMapLevel{
		{ItemStyle: &opts.ItemStyle{BorderColor: "#fff", BorderWidth: 2, GapWidth: 2},
			UpperLabel: &opts.UpperLabel{Show: opts.Bool(false)}},
		{ItemStyle: &opts.ItemStyle{BorderColor: "#e3e6ea", BorderWidth: 4, GapWidth: 1},
			UpperLabel: &opts.UpperLabel{Show: opts.Bool(true)}},
		{ColorSaturation: []float32{0.35, 0.6}, ItemStyle: &opts.ItemStyle{BorderWidth: 4, GapWidth: 1, BorderColorSaturation: 0.6},
			UpperLabel: &opts.UpperLabel{Show: opts.Bool(true)}},
	}
	c.AddSeries("allocated at the peak", nil, charts.WithSeriesOpts(func(s *charts.SingleSeries) {
		s.Data = data
		s.LeafDepth = 3
		s.Levels = levels
		s.Top, s.Bottom, s.Left, s.Right = "36", "40", "10", "10"
		s.UpperLabel = &opts.UpperLabel{Show: opts.Bool(true)}
	}))
	return newChart(prefix+"-tree", "tree", 520, c)
}

// leakChart is the staircase: the allocated floor after each steady step.
func leakChart(prefix string, steps []int, floors []int64) chartView {
	c := charts.NewBar()
	c.SetGlobalOptions(append(common(prefix+"-leak"),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "step", NameLocation: "middle", NameGap: 28}),
		// From zero, so that a bar's height is its floor: a staircase
		// drawn from its first step would make a 2% growth look tenfold.
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "allocated after the step", Min: 0}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "40", Bottom: "50"}),
	)...)
	x := make([]string, len(steps))
	data := make([]opts.BarData, len(floors))
	for i := range steps {
		x[i] = fmt.Sprint(steps[i])
		data[i] = opts.BarData{Value: floors[i]}
	}
	c.SetXAxis(x).AddSeries("floor", data, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#e15759"}))
	return newChart(prefix+"-leak", "bars", 300, c)
}

// fragPanel is the fragmentation at one moment with its segment chart.
type fragPanel struct {
	Frag      *attribution.Fragmentation
	Segments  chartView
	RestCount int
	Rest      attribution.SegmentFill
}

// segmentChart shows every segment shown at a moment as a bar of
// allocated, pending-free and free bytes.
func segmentChart(id string, f attribution.FragView) chartView {
	c := charts.NewBar()
	c.SetGlobalOptions(append(common(id),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Top: "4"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "bytes", NameLocation: "middle", NameGap: 26}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true)}),
		// The grid holds its labels: "160.00 MiB @ 0x302000000 (expandable)" is long.
		charts.WithGridOpts(opts.Grid{Left: "10", Right: "50", Top: "40", Bottom: "50", ContainLabel: opts.Bool(true)}),
	)...)
	segs := f.Segments.Shown
	names := make([]string, len(segs))
	var alloc, pending, free []opts.BarData
	for i, s := range segs {
		kind := ""
		if s.Expandable {
			kind = " (expandable)"
		}
		names[i] = fmt.Sprintf("%s @ %#x%s", units.Bytes(s.Size), s.Addr, kind)
		alloc = append(alloc, opts.BarData{Value: s.Allocated})
		pending = append(pending, opts.BarData{Value: s.PendingFree})
		free = append(free, opts.BarData{Value: s.Free})
	}
	c.SetGlobalOptions(charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true), Data: names}))
	stack := charts.WithBarChartOpts(opts.BarChart{Stack: "segment"})
	c.AddSeries("allocated", alloc, stack, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#2f6fdb"}))
	c.AddSeries("freed, pending on a stream", pending, stack, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#8e6bd8"}))
	c.AddSeries("free (holes)", free, stack, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#f3c68c"}))
	return newChart(id, "hbars", max(160, 90+16*len(segs)), c)
}

// histogramChart is the free holes by size at every moment; nil when no
// moment has a hole.
func histogramChart(prefix string, frags []attribution.FragView) *chartView {
	// Buckets from the first to the last that any moment fills.
	first, n := -1, 0
	for _, f := range frags {
		for k, b := range f.Histogram {
			if b.Count > 0 {
				if first < 0 || k < first {
					first = k
				}
				n = max(n, k+1)
			}
		}
	}
	if first < 0 {
		return nil
	}
	c := charts.NewBar()
	c.SetGlobalOptions(append(common(prefix+"-holes"),
		charts.WithTooltipOpts(opts.Tooltip{Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Top: "4"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "hole size", NameLocation: "middle", NameGap: 30}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "free bytes in holes of that size"}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "40", Top: "50", Bottom: "50"}),
	)...)
	var x []string
	for k := first; k < n; k++ {
		if k == 0 {
			x = append(x, "< 1 KiB")
		} else {
			x = append(x, pow2(512<<k)+"–"+pow2(1024<<k))
		}
	}
	c.SetXAxis(x)
	for _, f := range frags {
		var data []opts.BarData
		for k := first; k < n; k++ {
			data = append(data, opts.BarData{Value: 0})
			if k < len(f.Histogram) {
				b := f.Histogram[k]
				data[len(data)-1] = opts.BarData{Value: b.Bytes, Name: fmt.Sprintf("%d holes", b.Count)}
			}
		}
		c.AddSeries("at "+f.Label, data)
	}
	cv := newChart(prefix+"-holes", "bars", 320, c)
	return &cv
}

// oomPanel is the post-mortem of one OOM.
type oomPanel struct {
	O         *attribution.OOM
	When      string
	Request   siteRow // where the failing request was made
	SiteTable siteTable
	CatBar    catBar
}

func newOOMPanel(v *attribution.View, dv *attribution.DeviceView, o *attribution.OOM) oomPanel {
	p := oomPanel{O: o, Request: newSiteRow(v, attribution.SiteBytes{Site: o.Site, Label: o.SiteLabel,
		Bytes: o.Request, Requested: o.Request, Count: 1, Stack: o.Stack})}
	if ev := dv.Device.Timeline.Events; len(ev) > 0 {
		p.When = fmt.Sprintf("%s (event %d)", offset(dv.Device, o.TimeUS), o.Index)
	}
	for i, s := range o.At.Sites {
		if i == v.Options.TopSites {
			break
		}
		p.SiteTable.Rows = append(p.SiteTable.Rows, newSiteRow(v, s))
	}
	p.CatBar = newCatBar(o.Allocated, o.At.Categories)
	return p
}

// pow2 prints a power of two of bytes briefly: "512 B", "1 KiB", "256 MiB".
func pow2(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
