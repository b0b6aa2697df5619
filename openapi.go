package svc

import (
	"bytes"
	_ "embed"
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API, the file
// openapi.yaml at the root of this module, as YAML. The HTTP API serves it
// as JSON at GET /openapi.json; its tests check every request they send and
// every response they receive against it.
func OpenAPI() []byte { return bytes.Clone(openAPI) }
