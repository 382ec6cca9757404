# syntax=docker/dockerfile:1
#
# Router image: the stateless edge router (`deno run -P=router router/main.ts`) on port 8080.
# It needs network and environment access only, so the runtime image is a distroless base with
# the deno binary, our TypeScript and the npm packages the router loads: no shell, no Node,
# no ONNX Runtime.
#
#   docker build -f infra/docker/router.Dockerfile -t svc-router:0.1.0 .
#
# NOT BUILT HERE (Docker client only, no engine, no registry access). The runtime layout (these
# files, then only hono and zod in node_modules, a non-root uid, a read-only DENO_DIR) was
# reproduced by hand in a scratch directory and answered /healthz, /readyz and /metrics; msgpackr
# (pure JS, the shared body decoder) and prom-client (pure JS, with @opentelemetry/api, tdigest and
# bintrees) joined the router's graph later, not re-run in that layout.

ARG NODE_IMAGE=node:22-bookworm-slim
# glibc + libgcc_s, which is all the deno binary links against; `nonroot` is uid/gid 65532.
# Not pulled here.
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
# npm packages the router's module graph loads at run time. tests/e2e/infra/images.test.ts compares
# this list with `deno info router/main.ts`, so a new import fails the test, not the deployment.
ARG ROUTER_NPM_PACKAGES="@opentelemetry/api @types/node @types/ws bintrees hono msgpackr prom-client tdigest undici-types ws zod"
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# --ignore-scripts: nothing the router needs has an install step we want (onnxruntime-node's
# would download CUDA libraries). install.cjs is the deno package's own offline step that
# materialises node_modules/deno/deno, the binary copied into the runtime image below, so the
# router runs exactly the Deno version package-lock.json pins.
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && node node_modules/deno/install.cjs \
 && mkdir -p /out/node_modules \
 && for p in ${ROUTER_NPM_PACKAGES}; do cp -a --parents "node_modules/$p" /out/; done
COPY deno.json ./
COPY shared ./shared
COPY router ./router
# deno.json lists worker/ as a workspace member; its deno.json is all the router needs of it.
COPY worker/deno.json ./worker/deno.json
# Transpile at build time into a DENO_DIR that is copied along. The paths match at run time
# (/app), so the cache is used; if it is not, Deno transpiles in memory (checked by hand).
ENV DENO_DIR=/out/deno-dir
RUN node_modules/deno/deno cache router/main.ts \
 && cp deno.json package.json /out/ \
 && cp -a shared router /out/ \
 && mkdir -p /out/worker \
 && cp worker/deno.json /out/worker/

# ---------------------------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
COPY --from=build /app/node_modules/deno/deno /usr/local/bin/deno
COPY --from=build /out /app
WORKDIR /app
ENV SVC_PORT=8080 \
    SVC_HOST=0.0.0.0 \
    DENO_DIR=/app/deno-dir \
    DENO_NO_UPDATE_CHECK=1
# Files stay root-owned; the router writes nothing (several replicas share state through
# SVC_KV_URL, a denokv server, not a local file).
USER 65532:65532
EXPOSE 8080
# The router closes worker sockets (1001: workers reconnect elsewhere) and exits within 5 s.
STOPSIGNAL SIGTERM
# No shell or curl in a distroless image: `deno eval` (all permissions, no config file) fetches
# /healthz and exits non-zero on any failure, including a refused connection.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["deno", "eval", "--no-config", "const r = await fetch(`http://127.0.0.1:${Deno.env.get('SVC_PORT') ?? '8080'}/healthz`); Deno.exit(r.ok ? 0 : 1);"]
# The V8 flags are deno.json's `router` task's (docs/fleet.md, "Router memory"): a proxy's garbage dies
# young, and V8's defaults would let a busy router's heap grow to about twice what it needs.
CMD ["deno", "run", "-q", "-P=router", "--v8-flags=--max-semi-space-size=8,--heap-growing-percent=50", "router/main.ts"]
