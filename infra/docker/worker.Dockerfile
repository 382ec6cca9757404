# syntax=docker/dockerfile:1
#
# Worker image: one inference worker (`deno run -P=worker worker/main.ts`) on port 8080.
#
# Build from the repository root (the context must be the root: the image needs package.json,
# deno.json, shared/ and worker/):
#
#   GPU (default): docker build -f infra/docker/worker.Dockerfile -t svc-worker:0.1.0 .
#   CPU variant:   docker build -f infra/docker/worker.Dockerfile \
#                    --build-arg BASE_IMAGE=ubuntu:24.04 --build-arg DEVICE=cpu \
#                    -t svc-worker-cpu:0.1.0 .
#
# NOT BUILT HERE: the machine this was written on has a Docker client but no engine, no GPU and
# no access to Docker Hub, nvcr.io or NuGet. The layout below (files copied, npm ci
# --ignore-scripts, the deno bin link, the command, running as a non-root user with a read-only
# app directory) was reproduced by hand in a scratch directory and served a request; the image
# tags and the CUDA provider download were not exercised. See infra/docker/README.md.

# Build arguments used in FROM lines must be declared before the first FROM.
# Node only installs node_modules and runs the health check; Deno comes from npm (package-lock).
ARG NODE_IMAGE=node:22-bookworm-slim
# CUDA 12 + cuDNN 9 runtime: what the CUDA execution provider of onnxruntime-node 1.30 (linux x64)
# loads. Tag naming follows NVIDIA's `<cuda>-cudnn-runtime-<os>` scheme; not pulled here.
ARG BASE_IMAGE=nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04

# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
# `cuda` or `cpu`: whether to fetch ORT's CUDA provider libraries, and the image's SVC_DEVICE.
ARG DEVICE=cuda
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# --ignore-scripts (also set in .npmrc): onnxruntime-node's install script would download CUDA
# libraries from NuGet on every install, GPU or not. We run the two install steps we want below,
# explicitly.
#
# `node node_modules/deno/install.cjs` is the deno package's own (offline) install step: it
# hard-links the platform binary out of @deno/linux-*-glibc and points node_modules/.bin/deno
# straight at it. Without it .bin/deno is a Node wrapper that spawns deno as a child, and SIGTERM
# would reach the wrapper, not the worker, so the graceful drain would never start. The `test`
# fails the build if the link was not replaced. @deno/* is then redundant (the hard link keeps the
# binary) and the non-Linux ORT builds are dead weight (about 220 MB).
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && node node_modules/deno/install.cjs \
 && test "$(readlink node_modules/.bin/deno)" = "../deno/deno" \
 && rm -rf node_modules/@deno \
    node_modules/onnxruntime-node/bin/napi-v6/darwin \
    node_modules/onnxruntime-node/bin/napi-v6/win32
# The CUDA execution provider. The npm package of onnxruntime-node 1.30 ships libonnxruntime.so.1
# for linux/x64 but NOT the provider libraries (libonnxruntime_providers_cuda.so,
# libonnxruntime_providers_shared.so, libonnxruntime_providers_tensorrt.so): its install script
# fetches them from the Microsoft.ML.OnnxRuntime.Gpu.Linux NuGet package of the same version. We
# run that script once here, on purpose, with the flag that forces the install (the bare flag:
# `=cuda12` reads as no flag in the script's 1.30 parser, which then skips the install whenever
# npm's environment is set; `npx deno task gpu:setup` runs the same outside Docker). At run time
# ORT dlopens them from its own directory, and they in turn need the CUDA 12 and cuDNN 9 shared
# libraries of the base image plus the host driver that the NVIDIA container toolkit mounts.
# Not verified here (no GPU, no NuGet access): if a session cannot get CUDA, model loads fail
# with the ORT error in the model's last_error.
RUN if [ "$DEVICE" = "cuda" ]; then \
      node node_modules/onnxruntime-node/script/install.js --onnxruntime-node-install \
      && test -f node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime_providers_cuda.so; \
    fi

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE}
ARG DEVICE=cuda
# tini as PID 1: it forwards SIGTERM to deno (which drains, then exits 0) and reaps children.
# Deno alone as PID 1 would ignore a SIGTERM that arrives before the worker has installed its
# signal listener (the kernel drops default-action signals to PID 1).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# Node.js: the binary only (no npm at run time); used by the HEALTHCHECK below.
COPY --from=deps /usr/local/bin/node /usr/local/bin/node
# A fixed numeric uid/gid so Kubernetes' runAsNonRoot can verify it and volume ownership is
# predictable (10001 avoids the uid 1000 `ubuntu` user of Ubuntu 24.04 images).
RUN groupadd --system --gid 10001 svc \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/svc --create-home \
    --shell /usr/sbin/nologin svc \
 && mkdir -p /var/cache/svc/models \
 && chown -R 10001:10001 /var/cache/svc
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY deno.json package.json ./
COPY shared ./shared
COPY worker ./worker
# deno.json lists router/ as a workspace member; its deno.json is all the worker needs of it
# (without it Deno prints a warning on every start).
COPY router/deno.json ./router/deno.json
ENV SVC_PORT=8080 \
    SVC_HOST=0.0.0.0 \
    SVC_DEVICE=${DEVICE} \
    SVC_CACHE_DIR=/var/cache/svc/models \
    DENO_DIR=/opt/deno-dir \
    DENO_NO_UPDATE_CHECK=1 \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    HOME=/home/svc
# Transpile once at build time. DENO_DIR stays root-owned (read-only for the worker): Deno then
# just skips writing its cache, which was checked by hand with an unwritable DENO_DIR.
RUN node_modules/.bin/deno cache worker/main.ts
# Downloaded weights (`<org>/<name>/<path>` under SVC_CACHE_DIR). A volume so that they survive a
# container restart; in Kubernetes mount an emptyDir or a PVC here instead.
VOLUME ["/var/cache/svc"]
USER 10001:10001
EXPOSE 8080
# The worker drains on SIGTERM: /readyz turns 503, the router is told, in-flight requests get up
# to SVC_SHUTDOWN_DRAIN_S (25 s). Give `docker stop` more than that: `docker stop -t 35`.
STOPSIGNAL SIGTERM
# Liveness only (/healthz): /readyz is 503 until SVC_PRELOAD_MODELS are loaded and while draining,
# which is not a reason to restart the container.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.SVC_PORT || 8080}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node_modules/.bin/deno", "run", "-q", "-P=worker", "worker/main.ts"]
