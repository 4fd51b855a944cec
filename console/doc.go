// Package console is delaybridge's web console: pages that show every
// topic's backlog, slots, messages and replicas, and the operator's actions
// (pause, resume, requeue, purge, cancel, reschedule). It owns the HTTP
// handlers, their templates and assets (embedded: it works with no
// network), and the console's security; the data and every change go
// through the same queue functions as the CLI.
//
// What it guarantees:
//   - Without a token the console is read-only: every action answers 403 and
//     changes nothing. With a token, an action needs it (a bearer header, or
//     a session cookie set by the login form plus the session's CSRF token
//     in the form) and a same-origin request; anything else is 401 or 403.
//   - An action is a POST (GET answers 405) and asks for confirmation first.
//   - No message body or secret is put in a URL or a log: a message is named
//     by its slot and MessageID, a listing's cursor by a server-side handle.
//   - Pages are html/template (bodies are always escaped) served with a
//     strict Content-Security-Policy; the only script is a static file.
package console
