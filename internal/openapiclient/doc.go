// Package openapiclient is a client of the svc HTTP API generated from
// openapi.yaml by oapi-codegen, a common OpenAPI generator for Go, with
// its default settings. It is not the Go client of svc (that is package
// client): it exists to show that a generator makes a working client from
// the document. Its tests check that client.gen.go is what the generator
// makes of today's document, and run requests with it against a real
// server.
//
// To regenerate after a change of openapi.yaml:
//
//	go generate ./internal/openapiclient
package openapiclient

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../openapi.yaml
