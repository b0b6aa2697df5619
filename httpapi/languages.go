package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/svc-sandbox/svc"
)

// languages is the body of GET /languages: the recipe of each language
// whose toolchain /info lists (svc.Languages), in the order of
// svc.LanguageRecipes; empty for an image with none.
type languages struct {
	Languages []svc.Language `json:"languages"`
}

// languagesBody encodes /languages once, for the toolchains of /info.
func languagesBody(toolchains []string) ([]byte, error) {
	l := languages{Languages: svc.Languages(toolchains)}
	if l.Languages == nil {
		l.Languages = []svc.Language{}
	}
	b, err := json.Marshal(l)
	return append(b, '\n'), err
}

// serveLanguages serves GET /languages.
func (h *Handler) serveLanguages(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(h.langs)
}
