package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/provider/settlement"
)

// amountText writes a settlement amount, or "-" when there is none.
func amountText(a *wire.Amount) string {
	if a == nil {
		return "-"
	}
	return a.Amount + " " + a.Currency
}

// settlementCommand serves "settlement run" and "settlement show".
func settlementCommand(ctx context.Context, opts *options, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	if len(args) == 0 || (args[0] != "run" && args[0] != "show") {
		return 0, usagef(`"settlement" takes the subcommand "run" or "show"`)
	}
	fs := newFlagSet("settlement "+args[0], stderr, opts)
	date := fs.String("date", "", "the report date, such as 2026-03-14 (UTC; required)")
	provider := fs.String("provider", "", "the provider whose books are meant, as the routing file names it (default: the API's default provider); each provider's report is settled on its own")
	api, err := parseFlags(fs, args[1:], opts, getenv)
	if err != nil {
		return 0, err
	}
	if *date == "" {
		return 0, usagef("settlement %s needs --date, such as --date %s", args[0], time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly))
	}
	// The API's own rule, so that a mistyped date is a usage error here.
	if _, err := settlement.ParseSettlementDate(*date, time.Now()); err != nil {
		return 0, usagef("settlement %s: --date %v", args[0], err)
	}
	if *provider != "" {
		if err := chargeonce.CheckProviderName(*provider); err != nil {
			return 0, usagef("settlement %s: --provider: %v", args[0], err)
		}
	}
	var s wire.Settlement
	if args[0] == "run" {
		run, err := api.RunSettlement(ctx, *provider, *date)
		if err != nil {
			return 0, err
		}
		if run.Running != nil {
			show := "starter settlement show --date " + *date
			if *provider != "" {
				show += " --provider " + *provider
			}
			fmt.Fprintf(stdout, "the settlement of %s at %s is still running; see it with: %s\n", *date, run.Running.Provider, show)
			return exitPending, nil
		}
		s = *run.Settlement
	} else if s, err = api.GetSettlement(ctx, *provider, *date); err != nil {
		return 0, err
	}
	if opts.json {
		return exitPaid, writeJSONLine(stdout, s)
	}
	printSettlement(stdout, s)
	return exitPaid, nil
}

// printSettlement prints the day as a few tables.
func printSettlement(w io.Writer, s wire.Settlement) {
	fmt.Fprintf(w, "settlement of %s at %s: %s (grace %s), run at %s\n", s.Date, s.Provider, s.Status, chargeonce.Plural(s.GraceDays, "day"), s.FinishedAt.Format(time.RFC3339))
	exceptions := 0
	for _, n := range s.ExceptionCounts {
		exceptions += n
	}
	fmt.Fprintf(w, "  %s, %d matched, %d awaiting their report, exceptions: %d\n\n", chargeonce.Plural(s.Lines, "line"), s.Matched, s.Awaiting, exceptions)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CURRENCY\tLINES\tGROSS\tFEE\tNET")
	for _, t := range s.Totals {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.Currency, t.Lines, t.Gross, t.Fee, t.Net)
	}
	_ = tw.Flush()
	if len(s.Exceptions) == 0 {
		fmt.Fprintln(w, "\nno exceptions")
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tCHARGE\tORDER\tLINE\tREPORTED\tEXPECTED")
	for _, e := range s.Exceptions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Kind, orDash(e.ChargeID), orDash(nonZero(e.OrderID)), orDash(nonZero(int64(e.Line))), amountText(e.Reported), amountText(e.Expected))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for i, e := range s.Exceptions {
		fmt.Fprintf(w, "%d. %s: %s\n", i+1, e.Kind, e.Detail)
	}
}

func nonZero(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
