# syntax=docker/dockerfile:1
#
# The delaybridge image: a static binary on distroless, run as a non-root user.
#
#   docker build --build-arg VERSION=$(cat VERSION) \
#                --build-arg COMMIT=$(git rev-parse --short=12 HEAD) \
#                --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t delaybridge .
#
# Without --build-arg VERSION the binary and the label still carry the VERSION
# file's version (scripts/build-static.sh reads it; the label reads the
# build-arg, so pass it for the label). COMMIT needs the build-arg: .git is
# not in the build context. docs/installation.md has the steps.
#
# No HEALTHCHECK: Kubernetes probes /healthz and /readyz (deploy/kubernetes).

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION
ARG COMMIT
ARG DATE
# The same script builds the binary outside Docker (and in deploy's tests).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    VERSION="$VERSION" COMMIT="$COMMIT" DATE="$DATE" sh scripts/build-static.sh /out/delaybridge

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION
ARG COMMIT
ARG DATE
LABEL org.opencontainers.image.title="delaybridge" \
      org.opencontainers.image.description="Moves delayed messages from Redis sorted sets to RabbitMQ or Kafka when they fall due" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$COMMIT" \
      org.opencontainers.image.created="$DATE" \
      org.opencontainers.image.source="https://github.com/delaybridge/delaybridge" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/delaybridge /delaybridge
# Numeric, not "nonroot": Kubernetes' runAsNonRoot can only verify a numeric
# user. 65532 is distroless's nonroot user.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/delaybridge"]
CMD ["run"]
