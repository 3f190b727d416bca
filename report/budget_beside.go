package report

import (
	"fmt"
	"io"

	"github.com/memscope/memscope/attribution"
	"github.com/memscope/memscope/budget"
	"github.com/memscope/memscope/internal/units"
)

// besideRow is one fix of the catalog with its predicted new peak (from the
// config) and advise's (from the snapshot's blocks); nil where one side
// does not suggest it.
type besideRow struct {
	kind      budget.FixKind
	name      string
	predicted *budget.Fix
	snapshot  *attribution.AdviceFix
}

// budgetBeside pairs the predicted fixes with advise's by kind: the
// predicted ones in their order, then advise's that were not predicted.
func budgetBeside(fixes []budget.Fix, ad *attribution.Advice) []besideRow {
	var rows []besideRow
	at := map[budget.FixKind]int{}
	for i := range fixes {
		f := &fixes[i]
		if _, ok := at[f.Kind]; !ok {
			at[f.Kind] = len(rows)
			rows = append(rows, besideRow{kind: f.Kind, name: budgetFixText(*f).name, predicted: f})
		}
	}
	for i := range ad.Fixes {
		f := &ad.Fixes[i]
		if k, ok := at[f.Kind]; ok {
			if rows[k].snapshot == nil {
				rows[k].snapshot = f
			}
			continue
		}
		at[f.Kind] = len(rows)
		rows = append(rows, besideRow{kind: f.Kind, name: adviceFixWords(*f).name, snapshot: f})
	}
	return rows
}

// budgetBesideText writes the predicted fixes next to advise's of the
// snapshot: fix | predicted (from the config) | from the snapshot's blocks.
func budgetBesideText(w io.Writer, r *Budget) error {
	ad := r.Advice
	if !ad.Training || ad.Step < 0 {
		return nil // advise covers training peaks: an inference budget is as it was
	}
	rows := budgetBeside(r.Fixes, ad)
	if len(rows) == 0 {
		return nil
	}
	p := r.Prediction
	if _, err := fmt.Fprintf(w, "\nthe fixes, predicted from the config and computed from the snapshot's blocks (advise: peak %s in step %d %s):\n",
		units.Bytes(ad.Peak), ad.Step, ad.Phase); err != nil {
		return err
	}
	tw := newTable(w, 0)
	fmt.Fprintf(tw, "  fix\tpredicted new peak\tfrom the snapshot\n")
	for _, row := range rows {
		pred, snap := "–", "–"
		if f := row.predicted; f != nil {
			pred = fmt.Sprintf("%s (%s)", units.Bytes(f.NewPeak), signedPercent(f.NewPeak-p.PeakBytes(), p.PeakBytes()))
		}
		if f := row.snapshot; f != nil {
			snap = fmt.Sprintf("%s (%s)", units.Bytes(f.NewPeak), signedPercent(f.NewPeak-ad.Peak, ad.Peak))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", row.name, pred, snap)
	}
	return tw.Flush()
}
