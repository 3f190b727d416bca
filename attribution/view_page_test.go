package attribution

import "testing"

// TestPage: each snapshot's timeline keeps the points its section will
// have if no later snapshot adds devices; the views share the bounds of
// every section on the page.
func TestPage(t *testing.T) {
	two, err := onDevices(4*mib, 0, 1).Decode("two.pickle")
	if err != nil {
		t.Fatal(err)
	}
	one, err := onDevices(2*mib, 0).Decode("one.pickle")
	if err != nil {
		t.Fatal(err)
	}
	var p Page
	var ans []*Analysis
	for i, tt := range []struct {
		name     string
		an       func() *Analysis
		sections int // after it: its points are ViewOptionsFor(sections)'s
	}{
		{"two devices", func() *Analysis { return p.Add(two, Options{Device: -1}) }, 2},
		{"one more", func() *Analysis { return p.Add(one, Options{Device: -1}) }, 3},
		{"one of two devices", func() *Analysis { return p.Add(two, Options{Device: 1}) }, 4},
	} {
		an := tt.an()
		ans = append(ans, an)
		if want := ViewOptionsFor(tt.sections).Series.MaxPoints; an.opt.SeriesPoints != want {
			t.Errorf("Add %d (%s): SeriesPoints %d, want %d", i, tt.name, an.opt.SeriesPoints, want)
		}
		if p.Sections() != tt.sections {
			t.Errorf("Add %d (%s): Sections() = %d, want %d", i, tt.name, p.Sections(), tt.sections)
		}
	}
	views := p.Views()
	if len(views) != len(ans) {
		t.Fatalf("Views() = %d views, want %d", len(views), len(ans))
	}
	for i, v := range views {
		if v.Options != ViewOptionsFor(4) || len(v.Devices) != len(ans[i].Devices) {
			t.Errorf("view %d: %d devices under %+v, want %d under ViewOptionsFor(4)", i, len(v.Devices), v.Options, len(ans[i].Devices))
		}
	}
}
