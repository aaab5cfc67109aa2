package api

import (
	"net/http"
	"strings"

	"chargeonce/api/console"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

// mountConsole serves the operator's console under console.Path. The
// console signs its visitors in with a session of its own, so its paths
// need no bearer key (isPublic); its actions come back through actAs.
func (s *server) mountConsole(cfg Config) error {
	c, err := console.New(console.Config{Store: cfg.Store, Act: s.actAs, WebUI: cfg.WebUI, Namespace: cfg.Namespace, Providers: s.providers, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	s.mux.Handle(console.Path, c)
	s.mux.Handle(console.Path+"/", c)
	return nil
}

// isConsole reports whether path is the console's.
func isConsole(path string) bool {
	return path == console.Path || strings.HasPrefix(path, console.Path+"/")
}

// actAs serves r through the API's own routes as though key had sent it,
// from the console: the route checks the key's scope, and the audit log
// records the action as the console's.
func (s *server) actAs(w http.ResponseWriter, r *http.Request, key apikey.Record) {
	r, info := withRequestInfo(r)
	info.keyID, info.key, info.via = key.ID, key, store.AuditViaConsole
	s.recoverPanics(http.HandlerFunc(s.route)).ServeHTTP(w, r)
}
