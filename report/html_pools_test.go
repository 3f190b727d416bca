package report

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/internal/truth"
	"github.com/memscope/memscope/internal/units"
)

var (
	poolsTableRE = regexp.MustCompile(`(?s)<table class="data pools">.*?<tbody>(.*?)</tbody>`)
	shownPoolRE  = regexp.MustCompile(`(?s)<tr><td>([^<]*)</td><td>\((\d+), (\d+)\)</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td><td class="num">(\d+)</td></tr>`)
)

// shownPool is one row of the page's private pools table, as shown.
type shownPool struct {
	moment                    string
	pool                      [2]int64
	reserved, allocated, free string
	segments                  int
}

// pagePools parses the private pools table of a page; nil when it has
// none.
func pagePools(t *testing.T, page string) []shownPool {
	t.Helper()
	m := poolsTableRE.FindStringSubmatch(page)
	if m == nil {
		return nil
	}
	var out []shownPool
	for _, r := range shownPoolRE.FindAllStringSubmatch(m[1], -1) {
		a, _ := strconv.ParseInt(r[2], 10, 64)
		b, _ := strconv.ParseInt(r[3], 10, 64)
		n, _ := strconv.Atoi(r[7])
		out = append(out, shownPool{moment: html.UnescapeString(r[1]), pool: [2]int64{a, b},
			reserved: html.UnescapeString(r[4]), allocated: html.UnescapeString(r[5]), free: html.UnescapeString(r[6]), segments: n})
	}
	if got := strings.Count(m[1], "<tr>"); got != len(out) { // a "more" row is <tr class="more">
		t.Fatalf("private pools table: %d rows, %d of them parsed", got, len(out))
	}
	return out
}

// TestHTMLPrivatePools: the report lists the private pools near its
// fragmentation: at the end, each pool torch's memory_snapshot() held
// (truth.json's private_pools: reserved, allocated, segments, free =
// reserved − allocated), shown in the page's units; every moment's pools
// are the analysis's; the page says that their free memory serves only
// their graph and that empty_cache() does not release it; a run without
// a CUDA graph has no such table.
func TestHTMLPrivatePools(t *testing.T) {
	for _, name := range []string{"workloads/reduce-overhead", "workloads/cuda-graph", "mlp-adamw"} {
		t.Run(name, func(t *testing.T) {
			tr, err := truth.Read("../fixtures/" + name + "/truth.json")
			if err != nil {
				t.Fatal(err)
			}
			an, v := fixtureView(t, name)
			page := renderHTML(t, []*attribution.View{v}, HTMLOptions{})
			rows := pagePools(t, page)
			if len(tr.PrivatePools) == 0 {
				if rows != nil || strings.Contains(page, "Private pools") {
					t.Errorf("a run with no private pool shows a private pools table: %+v", rows)
				}
				return
			}
			text := html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(page, ""))
			text = strings.Join(strings.Fields(text), " ")
			for _, want := range []string{"Their free memory serves only their own graph's replays", "empty_cache() does not release it"} {
				if !strings.Contains(text, want) {
					t.Errorf("the page does not say %q", want)
				}
			}
			at := map[string]map[[2]int64]shownPool{}
			for _, r := range rows {
				if at[r.moment] == nil {
					at[r.moment] = map[[2]int64]shownPool{}
				}
				at[r.moment][r.pool] = r
			}
			if len(at["end"]) != len(tr.PrivatePools) {
				t.Errorf("%d pools at the end, torch held %d", len(at["end"]), len(tr.PrivatePools))
			}
			for key, w := range tr.PrivatePools {
				id, err := truth.PoolID(key)
				if err != nil {
					t.Fatal(err)
				}
				r, ok := at["end"][id]
				if !ok {
					t.Errorf("pool %s: not in the page's table at the end", key)
					continue
				}
				want := shownPool{"end", id, units.Bytes(w.Reserved), units.Bytes(w.Allocated), units.Bytes(w.Reserved - w.Allocated), w.Segments}
				if r != want {
					t.Errorf("pool %s at the end shows %+v, want torch's %+v", key, r, want)
				}
			}
			d := an.Devices[0]
			for k := range v.Devices[0].Frag {
				f := d.Frag[k]
				if len(at[f.Label]) != len(f.Private) {
					t.Errorf("at %s: %d pools shown, the analysis has %d", f.Label, len(at[f.Label]), len(f.Private))
				}
				for _, p := range f.Private {
					id := [2]int64{p.Pool.A, p.Pool.B}
					if r := at[f.Label][id]; r.reserved != units.Bytes(p.Reserved) || r.segments != p.Segments {
						t.Errorf("at %s pool %v shows %+v, want %s in %d segments", f.Label, id, r, units.Bytes(p.Reserved), p.Segments)
					}
				}
			}
		})
	}
}

// TestPoolRowsBound: past maxPoolRows pools at a moment, the page lists
// the first ones by id and says how many more there are.
func TestPoolRowsBound(t *testing.T) {
	var pools []attribution.PrivatePool
	for i := range maxPoolRows + 5 {
		pools = append(pools, attribution.PrivatePool{Reserved: 2 << 20, Segments: 1})
		pools[i].Pool.B = int64(i + 1)
	}
	rows := newPoolRows("end", pools)
	if len(rows) != maxPoolRows+1 || rows[maxPoolRows].More != 5 || rows[maxPoolRows-1].Pool.B != maxPoolRows {
		t.Errorf("newPoolRows of %d pools: %d rows, last %+v; want %d pools and 5 more", len(pools), len(rows), rows[len(rows)-1], maxPoolRows)
	}
	if rows := newPoolRows("end", pools[:3]); len(rows) != 3 || rows[2].More != 0 {
		t.Errorf("newPoolRows of 3 pools: %+v, want the 3", rows)
	}
}
