// Package deploy holds how delaybridge is built, deployed and watched: the
// Kubernetes manifests (kubernetes/), the Helm chart (helm/), a local stack (compose/), the Grafana
// dashboard (grafana/) and the Prometheus alerts (prometheus/).
//
// It is its own Go module so that the heavy libraries its tests use
// (kustomize, Helm, the Kubernetes API types, the Prometheus rule parser,
// compose-go) stay out of the daemon's go.mod. The tests prove offline what
// can be proven without a cluster: every manifest decodes strictly into the
// real API types, every variable set anywhere is one the daemon reads and
// accepts, every metric queried is one the daemon exports, and the image's
// build script produces a static binary that starts and serves /healthz.
package deploy
