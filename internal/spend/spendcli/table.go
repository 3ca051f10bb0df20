package spendcli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"aicli.dev/aicli/internal/spend"
)

// WriteTable renders a report: one row per day and model, a total row per day, and a grand total.
func WriteTable(w io.Writer, rep *spend.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DATE\tMODEL\tHARNESS\tINPUT\tCACHE READ\tCACHE WRITE\tOUTPUT\tCOST (USD)\t")
	var grand spend.ModelSpend
	grandUnpriced := false
	for _, d := range rep.Days {
		var day spend.ModelSpend
		dayUnpriced := false
		for _, m := range d.Models {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t\n", d.Date, m.Model, m.Harness, m.UncachedInput,
				m.CacheRead, m.CacheWrite, m.Output, cost(m.CostUSD, !m.Priced))
			day.UncachedInput += m.UncachedInput
			day.CacheRead += m.CacheRead
			day.CacheWrite += m.CacheWrite
			day.Output += m.Output
			day.CostUSD += m.CostUSD
			dayUnpriced = dayUnpriced || !m.Priced
		}
		fmt.Fprintf(tw, "%s\t%s\t\t%d\t%d\t%d\t%d\t%s\t\n", d.Date, "day total", day.UncachedInput, day.CacheRead,
			day.CacheWrite, day.Output, cost(day.CostUSD, dayUnpriced))
		grand.UncachedInput += day.UncachedInput
		grand.CacheRead += day.CacheRead
		grand.CacheWrite += day.CacheWrite
		grand.Output += day.Output
		grand.CostUSD += day.CostUSD
		grandUnpriced = grandUnpriced || dayUnpriced
	}
	fmt.Fprintf(tw, "%s\t%s\t\t%d\t%d\t%d\t%d\t%s\t\n", "TOTAL", "", grand.UncachedInput, grand.CacheRead,
		grand.CacheWrite, grand.Output, cost(grand.CostUSD, grandUnpriced))
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
