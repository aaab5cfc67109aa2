package chargeonce_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wireFile is the one non-test file that declares the checkout API's bodies
// and problem types.
const wireFile = "api/wire/wire.go"

// problemURN matches a problem type of the checkout API.
var problemURN = regexp.MustCompile(`urn:chargeonce:problem:[a-z-]*`)

// jsonKey matches a member name in a string literal that spells JSON.
var jsonKey = regexp.MustCompile(`"([A-Za-z_]+)"\s*:`)

// notWire names the types, as "file Type", whose JSON fields are those of a
// body by coincidence, with why they are another format.
var notWire = map[string]string{
	"store/settlement.go SettlementTotal": "the database's JSON of a run's totals, in minor units",
	"provider/ietf/hold.go captureBody":   "the provider contract's body of a capture, an amount in minor units",
	"fakeprovider/holds.go captureBody":   "the fake provider's capture body, not the checkout API's",
}

// TestWire_TheCheckoutAPIHasOneOwnerOfItsWireFormat keeps the checkout API's
// wire format in one place: its problem types are written in wire.go alone,
// each once, and no other non-test file declares the JSON fields of one of
// its bodies again (a struct's tags, a map literal's keys or a literal JSON
// object), so that the API, the starter and the chaos customers cannot
// drift apart. Tests keep literal bodies of their own on purpose: they pin
// the contract against the declaration.
func TestWire_TheCheckoutAPIHasOneOwnerOfItsWireFormat(t *testing.T) {
	problems, err := wireRedeclarations(".")
	require.NoError(t, err)
	require.Empty(t, problems, "the checkout API's bodies and problem types belong to %s alone:\n%s", wireFile, strings.Join(problems, "\n"))
}

// TestWire_ImportsOnlyTheStandardLibrary keeps the clients light: the
// starter links the wire package, and through it nothing of the server.
func TestWire_ImportsOnlyTheStandardLibrary(t *testing.T) {
	pkgs := goList(t, "./"+filepath.Dir(wireFile))
	require.Len(t, pkgs, 1)
	for _, dep := range pkgs[0].Deps {
		first, _, _ := strings.Cut(dep, "/")
		require.Falsef(t, strings.Contains(first, ".") || first == "chargeonce", "%s imports %s", pkgs[0].ImportPath, dep)
	}
}

func TestWireRedeclarations_ReportsEachRedeclaration(t *testing.T) {
	const wire = "package wire\n\n" +
		"const ProblemX = \"urn:chargeonce:problem:x\"\n\n" +
		"type Order struct {\n\tID int64 `json:\"id\"`\n\tTotal string `json:\"total\"`\n\tCurrency string `json:\"currency\"`\n}\n\n" +
		"type CheckoutRequest struct {\n\tCardToken string `json:\"card_token\"`\n}\n"
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "the wire file alone",
			files: map[string]string{},
		},
		{
			name:  "a problem type written again",
			files: map[string]string{"c/c.go": "package c\n\nconst p = \"urn:chargeonce:problem:x\"\n"},
			want:  []string{"c/c.go writes the problem type urn:chargeonce:problem:x"},
		},
		{
			name:  "a problem type written twice in the wire file",
			files: map[string]string{wireFile: wire + "\nconst ProblemY = \"urn:chargeonce:problem:x\"\n"},
			want:  []string{wireFile + " writes urn:chargeonce:problem:x 2 times"},
		},
		{
			name:  "a struct with some of a body's fields",
			files: map[string]string{"c/c.go": "package c\n\ntype order struct {\n\tID int64 `json:\"id\"`\n\tTotal string `json:\"total,omitempty\"`\n}\n"},
			want:  []string{"c/c.go:3: a struct declares [id total], fields of wire.Order"},
		},
		{
			name:  "an anonymous struct with a one-field body",
			files: map[string]string{"c/c.go": "package c\n\nvar b struct {\n\tCard string `json:\"card_token\"`\n}\n"},
			want:  []string{"c/c.go:3: a struct declares [card_token], fields of wire.CheckoutRequest"},
		},
		{
			name:  "a map literal",
			files: map[string]string{"c/c.go": "package c\n\nvar m = map[string]string{\"card_token\": \"tok_visa\"}\n"},
			want:  []string{"c/c.go:3: a map literal declares [card_token], fields of wire.CheckoutRequest"},
		},
		{
			name:  "a JSON string",
			files: map[string]string{"c/c.go": "package c\n\nconst s = `{\"total\": \"1.00\", \"currency\": \"TRY\"}`\n"},
			want:  []string{"c/c.go:3: a JSON string declares [currency total], fields of wire.Order"},
		},
		{
			name: "one field in common, other fields, or a test file",
			files: map[string]string{
				"c/c.go":      "package c\n\ntype a struct {\n\tID int64 `json:\"id\"`\n}\n\ntype b struct {\n\tID int64 `json:\"id\"`\n\tSource string `json:\"source\"`\n}\n",
				"c/c_test.go": "package c\n\nconst p = \"urn:chargeonce:problem:x\"\n\ntype o struct {\n\tID int64 `json:\"id\"`\n\tTotal string `json:\"total\"`\n}\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{wireFile: wire}
			maps.Copy(files, tt.files)
			for name, content := range files {
				p := filepath.Join(root, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			}
			got, err := wireRedeclarations(root)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// wireRedeclarations lists, under root, every non-test Go file other than
// the wire file that writes a problem type of the checkout API or declares
// the JSON fields of one of its bodies: all of a body's fields, or two or
// more of them and nothing else.
func wireRedeclarations(root string) ([]string, error) {
	fset := token.NewFileSet()
	wire, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(wireFile)), nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	bodies := map[string][]string{}
	ast.Inspect(wire, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if st, ok := ts.Type.(*ast.StructType); ok {
				bodies[ts.Name.Name] = tagKeys(st)
			}
		}
		return true
	})
	var problems []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == wireFile {
			counts := map[string]int{}
			for _, urn := range problemURN.FindAllString(string(src), -1) {
				counts[urn]++
			}
			for _, urn := range slices.Sorted(maps.Keys(counts)) {
				if counts[urn] > 1 {
					problems = append(problems, fmt.Sprintf("%s writes %s %d times", rel, urn, counts[urn]))
				}
			}
			return nil
		}
		for _, urn := range slices.Compact(slices.Sorted(slices.Values(problemURN.FindAllString(string(src), -1)))) {
			problems = append(problems, fmt.Sprintf("%s writes the problem type %s", rel, urn))
		}
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		report := func(n ast.Node, what string, keys []string) {
			slices.Sort(keys)
			if body := bodyOf(bodies, keys); body != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s declares %v, fields of wire.%s", rel, fset.Position(n.Pos()).Line, what, keys, body))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				return notWire[rel+" "+n.Name.Name] == ""
			case *ast.StructType:
				report(n, "a struct", tagKeys(n))
			case *ast.CompositeLit:
				if _, ok := n.Type.(*ast.MapType); ok {
					report(n, "a map literal", mapKeys(n))
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && strings.HasPrefix(strings.TrimSpace(s), "{") {
					var keys []string
					for _, m := range jsonKey.FindAllStringSubmatch(s, -1) {
						keys = append(keys, m[1])
					}
					report(n, "a JSON string", keys)
				}
			}
			return true
		})
		return nil
	})
	return problems, err
}

// bodyOf names the body whose fields keys are: all of them, or at least two
// and no others. keys and every body's fields are sorted.
func bodyOf(bodies map[string][]string, keys []string) string {
	keys = slices.Compact(keys)
	if len(keys) == 0 {
		return ""
	}
	for _, name := range slices.Sorted(maps.Keys(bodies)) {
		fields := bodies[name]
		if slices.Equal(keys, fields) || (len(keys) >= 2 && subset(keys, fields)) {
			return name
		}
	}
	return ""
}

func subset(keys, fields []string) bool {
	for _, k := range keys {
		if _, found := slices.BinarySearch(fields, k); !found {
			return false
		}
	}
	return true
}

// tagKeys is the sorted JSON member names that st's tags declare.
func tagKeys(st *ast.StructType) []string {
	var keys []string
	for _, field := range st.Fields.List {
		if field.Tag == nil {
			continue
		}
		tag, err := strconv.Unquote(field.Tag.Value)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	return keys
}

// mapKeys is the string-literal keys of a map literal.
func mapKeys(lit *ast.CompositeLit) []string {
	var keys []string
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.BasicLit); ok && k.Kind == token.STRING {
			if s, err := strconv.Unquote(k.Value); err == nil {
				keys = append(keys, s)
			}
		}
	}
	return keys
}
