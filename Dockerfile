# syntax=docker/dockerfile:1
#
# Conveyor: one image for every command of the CLI.
#   serve (default)                  HTTP :8080, gRPC :50051, optional metrics listener
#   controller                       the Kubernetes operator (:8081 /healthz /readyz /metrics)
#   migrate                          apply database migrations and exit
#   reap expiry|delete|archive       one reaper run and exit
#
#   docker build -t conveyor:0.1.0 --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker run --rm -p 8080:8080 -v conveyor-data:/data --read-only --tmpfs /tmp conveyor:0.1.0
#
# test/image.test.ts reads this file: it runs the "deps" stage's `npm ci --omit=dev` line and copies what the
# runtime stage's COPY lines name, then starts every command from that copy. Keep the stages in this shape.

ARG NODE_IMAGE=node:22-bookworm-slim

# ---- build: dev dependencies, the TypeScript compiler and Vite -> dist/ (dist/ui: the admin UI) ---------------
FROM ${NODE_IMAGE} AS build
# better-sqlite3 and argon2 compile from source when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
# src/ui holds the admin UI and its Vite configuration; `npm run build` builds it too (build:ui -> dist/ui).
COPY src ./src
COPY migrations ./migrations
RUN npm run build

# ---- deps: the production dependency set only ----------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# ---- runtime: node, tini, production node_modules, compiled JavaScript, the UI, the proto file; no compiler ---
FROM ${NODE_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="conveyor" \
      org.opencontainers.image.description="Kubernetes-native, topic-based message queue service (API server, operator, migrations, reapers)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# tini is PID 1: it forwards SIGTERM/SIGINT to node (the CLI shuts down gracefully on them) and reaps zombies.
# User 10001 owns nothing but /data, the one writable path (mount a volume there, and an emptyDir on /tmp).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 conveyor \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin conveyor \
 && mkdir -p /data /app \
 && chown 10001:10001 /data \
 && ln -s /data /app/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /build/dist/src ./dist/src
COPY --from=build /build/dist/migrations ./dist/migrations
# The admin UI's static files, served by `conveyor serve` at / (src/http/ui-assets.ts finds them beside dist/src).
COPY --from=build /build/dist/ui ./dist/ui
COPY package.json ./
COPY proto ./proto
# The default db.url, sqlite:./data/conveyor.db, resolves through /app/data to the /data volume.
ENV NODE_ENV=production
USER 10001:10001
EXPOSE 8080 50051 9090 8081
# --max-semi-space-size=64: a 64 MB young generation halves scavenge pauses (README "Node.js flags").
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=64", "/app/dist/src/cli.js"]
CMD ["serve"]
