package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Row is one figure and the references it is measured against.
type Row struct {
	// Section groups rows: throughput, latency, history, unknown, provider,
	// cost, invariant.
	Section string `json:"section"`
	// Metric names what was measured, such as "checkout c=8".
	Metric string `json:"metric"`
	// Unit is the unit of Value and of every reference value.
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// Refs are the same figure for the references, in the same unit.
	Refs []Ref `json:"refs,omitempty"`
	// Note says what a reader needs to read the figure right.
	Note string `json:"note,omitempty"`
}

// Ref is a reference figure.
type Ref struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Ratio is Row.Value / Value, or 0 when Value is 0.
	Ratio float64 `json:"ratio"`
}

// Target is one goal stated as a ratio between figures of the same run.
type Target struct {
	Name     string  `json:"name"`
	Measured float64 `json:"measured"`
	// Limit is the bound Measured must respect; Above says in which
	// direction (true: Measured >= Limit).
	Limit float64 `json:"limit"`
	Above bool    `json:"above"`
	Met   bool    `json:"met"`
}

// Report is everything one run produced.
type Report struct {
	Command        string   `json:"command"`
	Started        string   `json:"started"`
	Wall           string   `json:"wall"`
	GoVersion      string   `json:"goVersion"`
	CPUs           int      `json:"cpus"`
	Persistence    string   `json:"temporalPersistence"`
	Setup          []string `json:"setup"`
	Rows           []Row    `json:"rows"`
	Targets        []Target `json:"targets"`
	InvariantsHeld bool     `json:"invariantsHeld"`
	// beside is, by the metric that addAfter put rows after, the last of
	// those rows.
	beside map[string]string
}

func (r *Report) add(row Row) {
	for i := range row.Refs {
		if row.Refs[i].Value != 0 {
			row.Refs[i].Ratio = row.Value / row.Refs[i].Value
		}
	}
	r.Rows = append(r.Rows, row)
}

// addAfter adds row after the row whose metric is after, so that a figure
// stands beside the one it compares with, and after the rows added after
// it before, so that the figures beside one keep the order they were
// measured in; at the end when there is no such row.
func (r *Report) addAfter(after string, row Row) {
	anchor := after
	if last, ok := r.beside[after]; ok {
		anchor = last
	}
	if r.beside == nil {
		r.beside = map[string]string{}
	}
	r.beside[after] = row.Metric
	i := slices.IndexFunc(r.Rows, func(x Row) bool { return x.Metric == anchor })
	if i < 0 {
		r.add(row)
		return
	}
	tail := slices.Clone(r.Rows[i+1:])
	r.Rows = r.Rows[:i+1]
	r.add(row)
	r.Rows = append(r.Rows, tail...)
}

func (r *Report) target(name string, measured, limit float64, above bool) {
	met := measured <= limit
	if above {
		met = measured >= limit
	}
	if math.IsNaN(measured) || math.IsInf(measured, 0) {
		met = false
	}
	r.Targets = append(r.Targets, Target{Name: name, Measured: measured, Limit: limit, Above: above, Met: met})
}

// writeTable prints the report for people.
func (r *Report) writeTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "chargeonce benchmark: %s, %d CPUs, %s, wall %s\n", r.GoVersion, r.CPUs, r.Command, r.Wall)
	fmt.Fprintf(&b, "temporal persistence: %s\n", r.Persistence)
	for _, s := range r.Setup {
		fmt.Fprintf(&b, "setup: %s\n", s)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tMETRIC\tVALUE\tUNIT\tREFERENCES (ratio = value/ref)\tNOTE")
	for _, row := range r.Rows {
		refs := make([]string, 0, len(row.Refs))
		for _, ref := range row.Refs {
			refs = append(refs, fmt.Sprintf("%s %s (%.2fx)", ref.Name, num(ref.Value), ref.Ratio))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Section, row.Metric, num(row.Value), row.Unit, strings.Join(refs, "; "), row.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nTARGETS\n")
	for _, t := range r.Targets {
		op, verdict := "<=", "NOT MET"
		if t.Above {
			op = ">="
		}
		if t.Met {
			verdict = "met"
		}
		fmt.Fprintf(&b, "  %-58s %8s %s %-5s %s\n", t.Name, num(t.Measured), op, num(t.Limit), verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num formats a figure with as many digits as it deserves.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
