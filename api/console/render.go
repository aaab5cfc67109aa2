package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"

	"chargeonce"
)

// view is what every page's template gets.
type view struct {
	Title string
	// Signed is false on the pages shown before sign-in.
	Signed  bool
	KeyName string
	KeyID   string
	// CanAct shows the forms that change state.
	CanAct bool
	// CSRF is the session's token, which every form carries.
	CSRF string
	// Path is the page's path, for the navigation.
	Path string
	Data any
}

// funcs are the helpers the templates share.
var funcs = template.FuncMap{
	"money": func(minor int64, currency string) string {
		return chargeonce.Money{Minor: minor, Currency: currency}.String()
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"whenp": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"day": func(t time.Time) string { return t.UTC().Format(time.DateOnly) },
	"ms":  func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) },
	// newKey is a fresh Idempotency-Key for one form: sending the form
	// twice sends the same key, so the API answers the second with the
	// first's result.
	"newKey": func() string { return uuid.NewString() },
	"pct": func(part, whole int) string {
		if whole == 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
	},
	"active": func(current, prefix string) bool {
		if prefix == Path {
			return current == prefix
		}
		return strings.HasPrefix(current, prefix)
	},
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	files, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", f)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes the page with status. It renders into a buffer first, so
// that a template error is a 500 page and not half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, v *visit, title string, data any) {
	vw := view{Title: title, Path: r.URL.Path, Data: data}
	if v != nil {
		vw.Signed, vw.KeyName, vw.KeyID, vw.CanAct, vw.CSRF = true, v.key.Name, v.key.ID, v.CanAct(), v.session.CSRFToken
	}
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", vw); err != nil {
		c.log.Error("console: render a page", "page", page, "error", err)
		http.Error(w, "the console could not render this page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// renderError shows a message with status, on the layout of a signed-in
// visit when there is one.
func (c *Console) renderError(w http.ResponseWriter, r *http.Request, v *visit, status int, message string) {
	c.render(w, r, status, "error", v, http.StatusText(status), map[string]any{"Status": status, "Message": message})
}
