package api

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the API's OpenAPI 3.1 document (docs/openapi.json is a copy, kept
// equal by a test).
//
//go:embed openapi.json
var OpenAPI []byte

// serveOpenAPI is GET /v1/openapi.json; it needs no token.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(OpenAPI)
}
