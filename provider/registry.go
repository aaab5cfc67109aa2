package provider

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
)

// Registry maps the name of each provider a deployment reaches to its port.
// It is built once at start and never changes, so it is safe for concurrent
// use. Each entry is a provider of its own, behind breakers of its own (a
// *Breaker per entry), so that one failing provider never stops another.
type Registry struct {
	ports map[string]Port
	def   string
}

// ErrUnknownProvider is the error of Get for a name that the registry does
// not hold.
var ErrUnknownProvider = errors.New("unknown provider")

// NewRegistry builds the registry of ports, whose entry def is the default:
// the provider of the intents recorded before intents named theirs. Every
// name must be non-empty, and def one of them.
func NewRegistry(ports map[string]Port, def string) (Registry, error) {
	for name, p := range ports {
		if name == "" {
			return Registry{}, errors.New("provider registry: a provider name is empty")
		}
		if p == nil {
			return Registry{}, fmt.Errorf("provider registry: provider %q has no port", name)
		}
	}
	if _, ok := ports[def]; !ok {
		return Registry{}, fmt.Errorf("provider registry: the default provider %q is not one of %s", def, names(ports))
	}
	return Registry{ports: maps.Clone(ports), def: def}, nil
}

// Single is the registry of a deployment with one provider, named name.
func Single(name string, p Port) (Registry, error) {
	return NewRegistry(map[string]Port{name: p}, name)
}

// Get returns the port of the provider named name; the empty name is the
// default provider's. An unknown name is an error that wraps
// ErrUnknownProvider.
func (r Registry) Get(name string) (Port, error) {
	if name == "" {
		name = r.def
	}
	p, ok := r.ports[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: this worker reaches %s", ErrUnknownProvider, name, names(r.ports))
	}
	return p, nil
}

// Default returns the default provider's name and port.
func (r Registry) Default() (string, Port) {
	return r.def, r.ports[r.def]
}

// All yields each provider's name and port, in the order of their names.
func (r Registry) All() iter.Seq2[string, Port] {
	return func(yield func(string, Port) bool) {
		for _, name := range slices.Sorted(maps.Keys(r.ports)) {
			if !yield(name, r.ports[name]) {
				return
			}
		}
	}
}

// names lists the names of ports for errors.
func names(ports map[string]Port) string {
	if len(ports) == 0 {
		return "no provider"
	}
	return `"` + strings.Join(slices.Sorted(maps.Keys(ports)), `", "`) + `"`
}
