package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/svc-sandbox/svc"
)

// openAPIJSON is svc.OpenAPI() as JSON, converted once per process.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(svc.OpenAPI(), &doc); err != nil {
		return nil, fmt.Errorf("httpapi: openapi.yaml: %w", err)
	}
	var buf bytes.Buffer
	if err := yamlToJSON(&buf, &doc); err != nil {
		return nil, fmt.Errorf("httpapi: openapi.yaml: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
})

// yamlToJSON writes the JSON form of a YAML node, keeping the order of
// the keys. Keys must be strings, as in every OpenAPI document.
func yamlToJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return errors.New("want exactly one YAML document")
		}
		return yamlToJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return yamlToJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return fmt.Errorf("line %d: a key that is not a string", k.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSON(buf, k.Value)
			buf.WriteByte(':')
			if err := yamlToJSON(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, v := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := yamlToJSON(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.Write(b)
	default:
		return fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
	return nil
}

// writeJSON writes s as a JSON string.
func writeJSON(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always encodes
	buf.Write(b)
}

// serveOpenAPI serves GET /openapi.json: the document of this API.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	b, err := openAPIJSON()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}
