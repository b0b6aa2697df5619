package httpapi

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIRoutes: the paths and methods of the served document are the
// route table's, and exactly the public routes need no key.
func TestOpenAPIRoutes(t *testing.T) {
	b, err := openAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Security []map[string][]string                  `json:"security"`
		Paths    map[string]map[string]*json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Security) == 0 {
		t.Error("the document needs no key by default")
	}
	routes := (&Handler{}).table()
	for _, rt := range routes {
		item, ok := doc.Paths[rt.pattern]
		if !ok {
			t.Errorf("%s: not in the document", rt.pattern)
			continue
		}
		var methods []string
		for m := range rt.methods {
			methods = append(methods, strings.ToLower(m))
		}
		slices.Sort(methods)
		var documented []string
		for k := range item {
			if k != "parameters" && k != "summary" && k != "description" {
				documented = append(documented, k)
			}
		}
		slices.Sort(documented)
		if !slices.Equal(methods, documented) {
			t.Errorf("%s: methods %v, the document has %v", rt.pattern, methods, documented)
		}
		for _, m := range documented {
			var op struct {
				Security *[]map[string][]string `json:"security"`
			}
			if err := json.Unmarshal(*item[m], &op); err != nil {
				t.Fatal(err)
			}
			if public := op.Security != nil && len(*op.Security) == 0; public != rt.public {
				t.Errorf("%s %s: needs no key in the document: %v; in the server: %v", m, rt.pattern, public, rt.public)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(doc.Paths)) {
		if !slices.ContainsFunc(routes, func(rt route) bool { return rt.pattern == p }) {
			t.Errorf("%s: in the document, not in the route table", p)
		}
	}
}
