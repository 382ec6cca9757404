/**
 * Test harness: an in-process worker over the generated fixtures, on 127.0.0.1 and a free port;
 * its models run in ONNX Runtime, or on a fake backend for tests of the HTTP surface alone.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { createWorker, type WorkerInstance } from "#worker/bootstrap.ts";
import { serveWorkerApp } from "#worker/server/http_server.ts";
import type { NodeHttpServer } from "@svc/shared/http/node_server";
import type { ModelBackend } from "#worker/registry/runner.ts";
import { FakeBackend, modelShaped } from "./fake_backend.ts";

/** A running test worker. */
export interface TestWorker {
  url: string;
  instance: WorkerInstance;
  /** Its HTTP server (node:http, as the process runs it). */
  server: NodeHttpServer;
  logs: string[];
  close(): Promise<void>;
}

/**
 * Start a worker serving the fixture catalog from a cluster-cache directory. Env values of ""
 * remove a default (e.g. `SVC_CLUSTER_CACHE: ""` to load through the hub instead).
 */
export async function startTestWorker(
  env: Record<string, string> = {},
  opts: { preload?: boolean; backend?: ModelBackend } = {},
): Promise<TestWorker> {
  const fx = await ensureFixtures();
  const cacheDir = env.SVC_CACHE_DIR ?? await Deno.makeTempDir({ prefix: "svc-cache-" });
  const logs: string[] = [];
  const fullEnv: Record<string, string> = {
    SVC_MODELS_DIR: `${fx}/models`,
    SVC_CLUSTER_CACHE: `${fx}/cache`,
    SVC_CACHE_DIR: cacheDir,
    SVC_HUB_DISABLED: "1",
    SVC_MODEL_FILTER: "fixture/*",
    // Where the server below listens (a loopback server checks the Host of every request).
    SVC_HOST: "127.0.0.1",
    SVC_DEVICE: "cpu",
    SVC_INTRA_OP_THREADS: "1",
    SVC_LOG_JSON: "1",
    SVC_LOG_LEVEL: "debug",
    ...env,
  };
  for (const [k, v] of Object.entries(fullEnv)) if (v === "") delete fullEnv[k];
  // The logger the settings describe (secrets redacted as a process writes them), kept here.
  const instance = await createWorker(fullEnv, {
    writeLog: (l) => logs.push(l),
    backend: opts.backend,
  });
  if (opts.preload !== false) {
    try {
      await instance.preload();
    } catch (err) {
      await instance.close();
      if (!env.SVC_CACHE_DIR) await Deno.remove(cacheDir, { recursive: true }).catch(() => {});
      throw err;
    }
  }
  // The worker's own server (node:http), as the process runs it.
  const server = await serveWorkerApp(instance, instance.settings.http, {
    hostname: "127.0.0.1",
    port: 0,
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    instance,
    server,
    logs,
    async close() {
      await instance.close();
      await server.shutdown();
      if (!env.SVC_CACHE_DIR) await Deno.remove(cacheDir, { recursive: true }).catch(() => {});
    },
  };
}

/** A test worker whose models run on a fake backend, and that backend. */
export interface FakeBackendWorker extends TestWorker {
  backend: FakeBackend;
}

/**
 * A test worker over the fixture catalog whose models run on a fake backend answering outputs
 * shaped like the model's (tests/worker/fake_backend.ts): everything the HTTP surface does
 * (parsing, validation, negotiation, keys, queues, drain), without ONNX Runtime. Never for tests
 * of what a model computes.
 */
export async function startFakeBackendWorker(
  env: Record<string, string> = {},
  opts: { preload?: boolean } = {},
): Promise<FakeBackendWorker> {
  const backend = new FakeBackend("cpu", modelShaped);
  return { ...await startTestWorker(env, { ...opts, backend }), backend };
}

/** Run `fn` against a fresh test worker that is always stopped afterwards. */
export async function withWorker(
  fn: (w: TestWorker) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  const w = await startTestWorker(env);
  try {
    await fn(w);
  } finally {
    await w.close();
  }
}

/** Run `fn` against a fresh fake-backend worker (HTTP behaviour only) that is always stopped. */
export async function withFakeBackendWorker(
  fn: (w: FakeBackendWorker) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  const w = await startFakeBackendWorker(env);
  try {
    await fn(w);
  } finally {
    await w.close();
  }
}

/** A parsed JSON answer; tests read arbitrary fields of it. */
// deno-lint-ignore no-explicit-any
export type Json = any;

/** POST JSON and parse a JSON answer. */
export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Json }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Keep the raw text for assertions.
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** The lists every extract result carries, in the order they are sent. */
export const EXTRACT_LISTS = ["entities", "relations", "classifications", "objects"] as const;

/**
 * Assert an extract result's keys: `id`, the four lists and `data` when a schema was sent; the
 * lists the model does not fill (not in `filled`) are empty.
 */
export function assertExtractKeys(item: Json, filled: readonly string[], data = false): void {
  assert.deepEqual(Object.keys(item), ["id", ...EXTRACT_LISTS, ...(data ? ["data"] : [])]);
  for (const list of EXTRACT_LISTS) {
    if (!filled.includes(list)) assert.deepEqual(item[list], [], `${list} is empty`);
  }
}
