// Package api is the HTTP API for producers: schedule, look up, reschedule
// and cancel delayed messages by id from any language, behind bearer tokens.
//
// It is a thin layer over the queue package's producer API: every write goes
// through the same scripts (one Redis round trip per message, a pipeline for
// a batch), so the guarantees of docs/architecture.md hold for messages
// scheduled over HTTP as for any other. Topics come from the registry the daemon writes.
//
// Every answer is JSON; every error is {"error": "...", "code": "..."} with
// its status. A request refused (bad JSON, a field it does not know, a due
// time that cannot be honoured, a body over the sink's limit) changes
// nothing. Bodies and tokens never reach a log line.
//
// The routes are described by the OpenAPI 3.1 document served at
// GET /v1/openapi.json (OpenAPI, a copy of docs/openapi.json).
package api
