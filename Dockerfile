# syntax=docker/dockerfile:1
# Multi-stage build of the operator: a static binary on a distroless,
# non-root base (no shell, no package manager). Build with `make image`.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source edit does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO off: a static binary needs no libc in the runtime image. -trimpath and
# -s -w drop build paths and debug tables.
ARG TARGETOS=linux
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags='-s -w' -o /out/gitops-reverser ./cmd/gitops-reverser

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/gitops-reverser /gitops-reverser
# 65532 is distroless's "nonroot"; the Helm chart runs the Pod as this user
# with runAsNonRoot, which needs a numeric USER.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/gitops-reverser"]
