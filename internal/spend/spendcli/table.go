package spendcli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"aicli.dev/aicli/internal/spend"
)

// WriteTable renders a report: one row per day and model, a total row per day, and a grand total. Totals saturate
// at spend.MaxTokens like the report's own sums; a count at that limit is printed with a trailing "+", and so is a
// cost that sums a saturated row (it is a lower bound).
func WriteTable(w io.Writer, rep *spend.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DATE\tMODEL\tHARNESS\tINPUT\tCACHE READ\tCACHE WRITE\tOUTPUT\tCOST (USD)\t")
	var grand spend.ModelSpend
	grandUnpriced := false
	for _, d := range rep.Days {
		var day spend.ModelSpend
		dayUnpriced := false
		for _, m := range d.Models {
			row(tw, d.Date, m.Model, string(m.Harness), m, !m.Priced)
			day = add(day, m)
			dayUnpriced = dayUnpriced || !m.Priced
		}
		row(tw, d.Date, "day total", "", day, dayUnpriced)
		grand = add(grand, day)
		grandUnpriced = grandUnpriced || dayUnpriced
	}
	row(tw, "TOTAL", "", "", grand, grandUnpriced)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	var notes []string
	notes = append(notes, "pricing: "+rep.PricingSource)
	if rep.PricingFallbackReason != "" {
		notes = append(notes, "fallback: "+rep.PricingFallbackReason)
	}
	if len(rep.UnpricedModels) > 0 {
		notes = append(notes, "unpriced models (cost excluded): "+strings.Join(rep.UnpricedModels, ", "))
	}
	if rep.UnparseableFiles > 0 || rep.UnparseableLines > 0 {
		notes = append(notes, fmt.Sprintf("unparseable: %d files, %d lines", rep.UnparseableFiles, rep.UnparseableLines))
	}
	if grand.Saturated || slices.Contains([]int64{grand.UncachedInput, grand.CacheRead, grand.CacheWrite, grand.Output},
		spend.MaxTokens) {
		notes = append(notes, fmt.Sprintf("saturated: a count marked + is the largest a report holds (%d), the true "+
			"sum is larger; a cost marked + is a lower bound", int64(spend.MaxTokens)))
	}
	for _, q := range rep.Quota {
		who := string(q.Harness)
		if q.Namespace != "" || q.Agent != "" {
			who = q.Namespace + "/" + q.Agent + " " + who
		}
		notes = append(notes, fmt.Sprintf("quota %s: %s", who, quotaText(q.Quota)))
	}
	_, err := fmt.Fprintln(w, strings.Join(notes, "\n"))
	if err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// row writes one table row.
func row(tw io.Writer, date, model, harness string, m spend.ModelSpend, unpriced bool) {
	c := cost(m.CostUSD, unpriced)
	if m.Saturated {
		c += "+"
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", date, model, harness, count(m.UncachedInput),
		count(m.CacheRead), count(m.CacheWrite), count(m.Output), c)
}

// add sums rows for a total, saturating the counts; the total's cost is a lower bound (Saturated) when a part's is.
func add(t, m spend.ModelSpend) spend.ModelSpend {
	t.UncachedInput = spend.SatAdd(t.UncachedInput, m.UncachedInput)
	t.CacheRead = spend.SatAdd(t.CacheRead, m.CacheRead)
	t.CacheWrite = spend.SatAdd(t.CacheWrite, m.CacheWrite)
	t.Output = spend.SatAdd(t.Output, m.Output)
	t.CostUSD += m.CostUSD
	t.Saturated = t.Saturated || m.Saturated
	return t
}

func count(v int64) string {
	if v == spend.MaxTokens {
		return fmt.Sprintf("%d+", v)
	}
	return fmt.Sprintf("%d", v)
}

func cost(v float64, unpriced bool) string {
	s := fmt.Sprintf("%.4f", v)
	if unpriced {
		s += "*"
	}
	return s
}

func quotaText(q spend.Quota) string {
	var parts []string
	for _, w := range []*spend.QuotaWindow{q.Primary, q.Secondary} {
		if w != nil {
			parts = append(parts, fmt.Sprintf("%.1f%% of %dmin (resets %s)", w.UsedPercent, w.WindowMinutes, w.ResetsAt))
		}
	}
	return strings.Join(parts, "; ")
}
