package routing

import (
	"flag"
	"fmt"

	"chargeonce/internal/envflag"
)

// FlagName is the flag that gives the routing file, to the worker and to
// the API alike.
const FlagName = "routing"

// Flag is the routing file's flag, defined by RegisterFlag.
type Flag struct {
	fs   *flag.FlagSet
	path *string
}

// RegisterFlag defines the routing file's flag on fs; Table loads the file
// once fs is parsed.
func RegisterFlag(fs *flag.FlagSet) *Flag {
	return &Flag{fs: fs, path: fs.String(FlagName, "", "routing `file`: every provider and the rules that route payments to them (docs/routing.md); "+
		"the worker and the API must be given the same file (default: the one provider of the provider flags)")}
}

// Table loads the routing file that the flag gives, or returns nil when it
// was not given. The flags named in alone, which set the one provider of
// a process without a routing file, are refused besides it.
func (f *Flag) Table(alone ...string) (*Table, error) {
	if !envflag.AnyGiven(f.fs, FlagName) {
		return nil, nil
	}
	for _, name := range alone {
		if envflag.AnyGiven(f.fs, name) {
			return nil, fmt.Errorf("--%s and --%s do not go together: the routing file names every provider", FlagName, name)
		}
	}
	return Load(*f.path)
}

// Path is the routing file that the flag gives; empty when none.
func (f *Flag) Path() string { return *f.path }
