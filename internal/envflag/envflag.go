// Package envflag lets every flag of a command also be set from the
// environment, so that the same binary is configured by flags on a laptop and
// by environment variables in docker-compose.
//
// A flag named "temporal-address" with the prefix "CHARGEONCE" is read from
// CHARGEONCE_TEMPORAL_ADDRESS. A flag given on the command line wins over the
// environment. A bad value is refused with the name of the variable that held
// it, so the user knows what to fix.
package envflag

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Parse parses args into fs, then sets every flag that was not given on the
// command line from its environment variable, when that variable is set.
// getenv is usually os.Getenv; tests pass their own.
func Parse(fs *flag.FlagSet, args []string, prefix string, getenv func(string) string) error {
	SetUsage(fs, prefix)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })

	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		name := Var(prefix, f.Name)
		value := getenv(name)
		if value == "" {
			return
		}
		if setErr := fs.Set(f.Name, value); setErr != nil {
			err = fmt.Errorf("invalid value %q for environment variable %s: %v", value, name, setErr)
		}
	})
	return err
}

// AnyGiven reports whether any of the named flags was set by Parse, from the
// command line or from the environment, rather than left at its default.
func AnyGiven(fs *flag.FlagSet, names ...string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || slices.Contains(names, f.Name) })
	return given
}

// Var is the environment variable that holds the flag name under prefix.
func Var(prefix, name string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// SetUsage makes fs's help list its flags as chargeonce's commands write
// them, "--name", each beside its environment variable under prefix; an
// empty prefix is for a command whose flags have none.
func SetUsage(fs *flag.FlagSet, prefix string) {
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
		fs.VisitAll(func(f *flag.Flag) { printFlag(out, f, prefix) })
		if prefix != "" {
			fmt.Fprintf(out, "\nEvery flag can also be set through the environment variable shown beside it;\na flag on the command line wins.\n")
		}
	}
}

// zeroDefaults are the defaults not worth printing, as the flag package
// leaves them out: the zero values of the flag types.
var zeroDefaults = []string{"", "0", "0s", "false", "[]"}

func printFlag(out io.Writer, f *flag.Flag, prefix string) {
	kind, text := flag.UnquoteUsage(f)
	fmt.Fprintf(out, "  --%s", f.Name)
	if kind != "" {
		fmt.Fprintf(out, " %s", kind)
	}
	if prefix != "" {
		fmt.Fprintf(out, "\t(env %s)", Var(prefix, f.Name))
	}
	fmt.Fprintf(out, "\n    \t%s", strings.ReplaceAll(text, "\n", "\n    \t"))
	// A usage that says its default in words ("default: the charge budget
	// + 2s") says it better than the flag's value.
	if !StatesDefault(text) && !slices.Contains(zeroDefaults, f.DefValue) {
		fmt.Fprintf(out, " (default %q)", f.DefValue)
	}
	fmt.Fprintln(out)
}

// StatesDefault reports whether a flag's usage text names its default
// itself, as "(default: …)" or "(default …)".
func StatesDefault(usage string) bool {
	return strings.Contains(usage, "(default")
}
