package routing

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"chargeonce"
	"chargeonce/internal/webhook"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/provider/stripe"
)

// at is a value of the routing file with the line it was read from; set
// tells a value written from one left out.
type at[T any] struct {
	v    T
	line int
	set  bool
}

func (a *at[T]) UnmarshalYAML(n *yaml.Node) error {
	a.line, a.set = n.Line, true
	return n.Decode(&a.v)
}

// fileDoc is the routing file as written.
type fileDoc struct {
	Currencies at[[]string]             `yaml:"currencies"`
	Providers  []fileItem[fileProvider] `yaml:"providers"`
	Rules      []fileItem[fileRule]     `yaml:"rules"`
}

// fileProvider is one entry of the file's providers.
type fileProvider struct {
	Name               at[string]        `yaml:"name"`
	Dialect            at[string]        `yaml:"dialect"`
	URL                at[string]        `yaml:"url"`
	Timeout            at[time.Duration] `yaml:"timeout"`
	APIKey             at[string]        `yaml:"api_key"`
	APIKeyFile         at[string]        `yaml:"api_key_file"`
	SearchDelay        at[time.Duration] `yaml:"search_delay"`
	WebhookSecrets     at[[]string]      `yaml:"webhook_secrets"`
	WebhookSecretsFile at[string]        `yaml:"webhook_secrets_file"`
}

// fileRule is one entry of the file's rules.
type fileRule struct {
	Currencies at[[]string] `yaml:"currencies"`
	MinAmount  at[int64]    `yaml:"min_amount"`
	MaxAmount  at[int64]    `yaml:"max_amount"`
	Providers  at[[]string] `yaml:"providers"`
	Weights    at[[]int]    `yaml:"weights"`
}

// fileItem is an entry of a list of the file, with its line. Its fields
// are checked against T's here, since a value decoded on its own is not
// held to the known fields.
type fileItem[T any] struct {
	v    T
	line int
}

func (it *fileItem[T]) UnmarshalYAML(n *yaml.Node) error {
	it.line = n.Line
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping of fields", n.Line)
	}
	known := fieldNames(reflect.TypeFor[T]())
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(known, k.Value) {
			return fmt.Errorf("line %d: unknown field %q: want one of %s", k.Line, k.Value, strings.Join(known, ", "))
		}
	}
	return n.Decode(&it.v)
}

// fieldNames lists the YAML names of a struct's fields.
func fieldNames(t reflect.Type) []string {
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
	}
	return names
}

// fileError is an error at a line of the routing file, in a field: every
// error of Parse is one. A line of 0 is unknown, and an empty field is the
// file's syntax.
type fileError struct {
	line  int
	field string
	err   error
}

func (e *fileError) Error() string { return e.at("line ") }

func (e *fileError) Unwrap() error { return e.err }

// at is the error's text, its line after prefix.
func (e *fileError) at(prefix string) string {
	var s string
	if e.line > 0 {
		s = prefix + strconv.Itoa(e.line) + ": "
	}
	if e.field != "" {
		s += e.field + ": "
	}
	return s + e.err.Error()
}

// MaxWeight bounds a rule's weights, which are proportions: a finer split
// than one in a million means nothing for a volume of payments.
const MaxWeight = 1_000_000

// yamlLine is how the YAML decoder starts its messages about a line.
var yamlLine = regexp.MustCompile(`^line (\d+): `)

// Load reads and checks the routing file at path. Each of its errors names
// the file, the line and the field at fault; the first found is returned.
// A file of secrets named in it (api_key_file, webhook_secrets_file) is
// read relative to the routing file's directory.
func Load(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("routing file: %w", err)
	}
	t, err := Parse(data, filepath.Dir(path))
	var fe *fileError
	if errors.As(err, &fe) {
		sep := ":"
		if fe.line == 0 {
			sep = ": "
		}
		return nil, fmt.Errorf("routing file %s%s%s", path, sep, fe.at(""))
	}
	return t, err
}

// Parse reads and checks a routing file's contents, whose secret files are
// relative to dir. Its errors start with the line.
func Parse(data []byte, dir string) (*Table, error) {
	var doc fileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, &fileError{1, "providers", errors.New("the file is empty")}
	} else if err != nil {
		return nil, yamlError(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, &fileError{next.Line, "", errors.New("the file holds more than one YAML document")}
	}
	return doc.table(dir)
}

// yamlError is the decoder's error as a fileError at its line.
func yamlError(err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return &fileError{err: errors.New(msg)}
	}
	line, _ := strconv.Atoi(m[1])
	return &fileError{line: line, err: errors.New(msg[len(m[0]):])}
}

func (d fileDoc) table(dir string) (*Table, error) {
	if len(d.Providers) == 0 {
		return nil, &fileError{1, "providers", errors.New("the file lists no provider")}
	}
	t := &Table{}
	for i, it := range d.Providers {
		p, err := it.v.provider(it.line, dir)
		if err != nil {
			return nil, prefixField(err, fmt.Sprintf("providers[%d].", i))
		}
		if t.has(p.Name) {
			return nil, &fileError{it.v.Name.line, fmt.Sprintf("providers[%d].name", i), fmt.Errorf("%q names two providers", p.Name)}
		}
		t.providers = append(t.providers, p)
	}
	for i, it := range d.Rules {
		r, err := it.v.rule(it.line, t)
		if err != nil {
			return nil, prefixField(err, fmt.Sprintf("rules[%d].", i))
		}
		t.rules = append(t.rules, r)
	}
	for i, c := range d.Currencies.v {
		if _, err := chargeonce.CurrencyDigits(c); err != nil {
			return nil, &fileError{d.Currencies.line, fmt.Sprintf("currencies[%d]", i), err}
		}
		if len(t.rules) == 0 {
			continue
		}
		if gap, ok := t.uncovered(c); ok {
			return nil, &fileError{d.Currencies.line, fmt.Sprintf("currencies[%d]", i),
				fmt.Errorf("no rule covers %s from %d minor units, and the file says every payment in it must be routed", c, gap)}
		}
	}
	return t, nil
}

// prefixField puts prefix before the field of a fileError.
func prefixField(err error, prefix string) error {
	var fe *fileError
	if errors.As(err, &fe) {
		return &fileError{fe.line, prefix + fe.field, fe.err}
	}
	return err
}

// has reports whether the table holds a provider of that name.
func (t *Table) has(name string) bool {
	return slices.ContainsFunc(t.providers, func(p Provider) bool { return p.Name == name })
}

// uncovered returns the smallest amount of currency, from 1 to its
// chargeonce.MaxMinor, that no rule covers, if there is one.
func (t *Table) uncovered(currency string) (int64, bool) {
	var ranges [][2]int64
	for _, r := range t.rules {
		if slices.Contains(r.Currencies, currency) {
			ranges = append(ranges, [2]int64{r.MinAmount, cmp.Or(r.MaxAmount, chargeonce.MaxMinor(currency))})
		}
	}
	slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	next := int64(1)
	for _, rg := range ranges {
		if rg[0] > next {
			return next, true
		}
		next = max(next, rg[1]+1)
	}
	if next <= chargeonce.MaxMinor(currency) {
		return next, true
	}
	return 0, false
}

func (f fileProvider) provider(line int, dir string) (Provider, error) {
	missing := func(field string) error {
		return &fileError{line, field, errors.New("is required")}
	}
	if !f.Name.set {
		return Provider{}, missing("name")
	}
	if err := chargeonce.CheckProviderName(f.Name.v); err != nil {
		return Provider{}, &fileError{f.Name.line, "name", err}
	}
	if !f.Dialect.set {
		return Provider{}, missing("dialect")
	}
	if err := dialect.Check(f.Dialect.v); err != nil {
		return Provider{}, &fileError{f.Dialect.line, "dialect", err}
	}
	p := Provider{Settings: dialect.Settings{
		Name: f.Name.v, API: f.Dialect.v, URL: f.URL.v, Timeout: dialect.DefaultTimeout,
	}}
	if f.Timeout.set {
		if f.Timeout.v <= 0 {
			return Provider{}, &fileError{f.Timeout.line, "timeout", fmt.Errorf("%v is not positive", f.Timeout.v)}
		}
		p.Timeout = f.Timeout.v
	}
	switch f.Dialect.v {
	case dialect.IETF:
		if !f.URL.set {
			return Provider{}, missing("url")
		}
		for _, stripeOnly := range []at[string]{f.APIKey, f.APIKeyFile} {
			if stripeOnly.set {
				return Provider{}, &fileError{stripeOnly.line, "api_key", fmt.Errorf("is for the %s dialect only", dialect.Stripe)}
			}
		}
		if f.SearchDelay.set {
			return Provider{}, &fileError{f.SearchDelay.line, "search_delay", fmt.Errorf("is for the %s dialect only", dialect.Stripe)}
		}
	case dialect.Stripe:
		p.URL = cmp.Or(p.URL, stripe.DefaultBaseURL)
		key, err := secret(f.APIKey, f.APIKeyFile, "api_key", dir)
		if err != nil {
			return Provider{}, err
		}
		if key == "" {
			return Provider{}, &fileError{line, "api_key", errors.New("a Stripe provider needs its secret key, in api_key or api_key_file")}
		}
		p.StripeAPIKey = key
		p.StripeLookupDelay = stripe.SearchDelay
		if f.SearchDelay.set {
			if f.SearchDelay.v < 0 {
				return Provider{}, &fileError{f.SearchDelay.line, "search_delay", fmt.Errorf("%v is negative", f.SearchDelay.v)}
			}
			p.StripeLookupDelay = f.SearchDelay.v
		}
	}
	if _, err := provider.CheckHTTP(p.URL, &http.Client{Timeout: p.Timeout}); err != nil {
		return Provider{}, &fileError{f.URL.line, "url", err}
	}
	secrets, err := f.webhookSecrets(dir)
	if err != nil {
		return Provider{}, err
	}
	p.WebhookSecrets = secrets
	return p, nil
}

// webhookSecrets reads the provider's webhook secrets, from the file or
// from the file of secrets it names, one a line.
func (f fileProvider) webhookSecrets(dir string) ([]webhook.Secret, error) {
	list, line, field := f.WebhookSecrets.v, f.WebhookSecrets.line, "webhook_secrets"
	switch {
	case f.WebhookSecrets.set && f.WebhookSecretsFile.set:
		return nil, &fileError{f.WebhookSecretsFile.line, "webhook_secrets_file", errors.New("give webhook_secrets or webhook_secrets_file, not both")}
	case f.WebhookSecretsFile.set:
		text, err := secret(at[string]{}, f.WebhookSecretsFile, "webhook_secrets", dir)
		if err != nil {
			return nil, err
		}
		list, line, field = strings.Fields(text), f.WebhookSecretsFile.line, "webhook_secrets_file"
	case !f.WebhookSecrets.set:
		return nil, nil
	}
	secrets, err := webhook.ParseSecrets(list)
	if err != nil {
		return nil, &fileError{line, field, err}
	}
	return secrets, nil
}

// secret is a secret given in the file (inline) or in a file of its own
// (file), relative to dir, but not both; empty when neither is given.
func secret(inline, file at[string], field, dir string) (string, error) {
	switch {
	case inline.set && file.set:
		return "", &fileError{file.line, field + "_file", fmt.Errorf("give %s or %s_file, not both", field, field)}
	case inline.set:
		return strings.TrimSpace(inline.v), nil
	case !file.set:
		return "", nil
	}
	path := file.v
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", &fileError{file.line, field + "_file", err}
	}
	return strings.TrimSpace(string(data)), nil
}

func (f fileRule) rule(line int, t *Table) (Rule, error) {
	r := Rule{MinAmount: 1, Line: line}
	if len(f.Currencies.v) == 0 {
		return Rule{}, &fileError{cmp.Or(f.Currencies.line, line), "currencies", errors.New("a rule covers one currency at least")}
	}
	for i, c := range f.Currencies.v {
		if _, err := chargeonce.CurrencyDigits(c); err != nil {
			return Rule{}, &fileError{f.Currencies.line, fmt.Sprintf("currencies[%d]", i), err}
		}
		if slices.Contains(f.Currencies.v[:i], c) {
			return Rule{}, &fileError{f.Currencies.line, fmt.Sprintf("currencies[%d]", i), fmt.Errorf("%s is listed twice", c)}
		}
	}
	r.Currencies = f.Currencies.v
	if f.MinAmount.set {
		if f.MinAmount.v < 1 {
			return Rule{}, &fileError{f.MinAmount.line, "min_amount", fmt.Errorf("%d is not a positive amount in minor units", f.MinAmount.v)}
		}
		r.MinAmount = f.MinAmount.v
	}
	if f.MaxAmount.set {
		if f.MaxAmount.v < r.MinAmount {
			return Rule{}, &fileError{f.MaxAmount.line, "max_amount", fmt.Errorf("%d is below min_amount %d", f.MaxAmount.v, r.MinAmount)}
		}
		r.MaxAmount = f.MaxAmount.v
	}
	if len(f.Providers.v) == 0 {
		return Rule{}, &fileError{cmp.Or(f.Providers.line, line), "providers", errors.New("a rule lists one provider at least")}
	}
	for i, name := range f.Providers.v {
		field := fmt.Sprintf("providers[%d]", i)
		if !t.has(name) {
			return Rule{}, &fileError{f.Providers.line, field, fmt.Errorf("%q is not one of the file's providers", name)}
		}
		if slices.Contains(f.Providers.v[:i], name) {
			return Rule{}, &fileError{f.Providers.line, field, fmt.Errorf("%q is listed twice", name)}
		}
	}
	r.Providers = f.Providers.v
	if f.Weights.set {
		if len(f.Weights.v) != len(r.Providers) {
			return Rule{}, &fileError{f.Weights.line, "weights", fmt.Errorf("%d weights for %d providers: give one weight per provider", len(f.Weights.v), len(r.Providers))}
		}
		for i, w := range f.Weights.v {
			if w <= 0 || w > MaxWeight {
				return Rule{}, &fileError{f.Weights.line, fmt.Sprintf("weights[%d]", i), fmt.Errorf("%d is not from 1 to %d", w, MaxWeight)}
			}
		}
		r.Weights = f.Weights.v
	}
	return r, nil
}
