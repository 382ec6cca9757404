/**
 * `GET /v1/models` and `GET /v1/models/{model}` on the router: the catalog as the live fleet
 * sees it. One worker per bundle is asked for its list (bounded timeout, in parallel); `loaded`
 * is true when any worker in scope reports the model loaded. A worker is asked the way requests
 * reach it: over its connection (held by this router), or HTTP to its advertised URL. Bundles without a reachable worker
 * are described from the built-in catalog, so a fleet scaled to zero still lists its models.
 */
import type { WorkerAuth } from "./proxy/worker_auth.ts";
import type { WorkerStreams } from "./proxy/forward.ts";
import { sendOverStream } from "./proxy/stream_upstream.ts";
import { BUILTIN_CATALOG, catalogById, resolveServedName } from "@svc/shared/catalog";
import { modelInfoOf } from "@svc/shared/catalog/model_info";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { WorkerRecord } from "./directory/types.ts";
import type { Logger } from "@svc/shared/log";
import { modelsOf } from "./pools/selection.ts";

/** Bound on asking one worker for its catalog. */
export const CATALOG_FETCH_TIMEOUT_MS = 3000;

/** A model entry as the router returns it: a worker's ModelInfo (extras kept) merged across the fleet. */
export type MergedModelInfo = Record<string, unknown> & { name: string; loaded: boolean };

/** Workers in scope that can answer: not draining, one per bundle, least loaded first. */
function representatives(workers: readonly WorkerRecord[]): Map<string, WorkerRecord> {
  const out = new Map<string, WorkerRecord>();
  for (const w of workers) {
    if (w.draining) continue;
    const cur = out.get(w.bundle);
    if (!cur || w.in_flight + w.queue_depth < cur.in_flight + cur.queue_depth) out.set(w.bundle, w);
  }
  return out;
}

/** Fetch a JSON document from a worker with the catalog timeout; undefined on any failure. */
async function fetchJson(
  worker: WorkerRecord,
  path: string,
  log: Logger,
  doFetch: typeof fetch,
  workerAuth: WorkerAuth | undefined,
  streams: StreamsOf | undefined,
): Promise<{ status: number; body: unknown } | undefined> {
  const headers: Record<string, string> = { accept: "application/json" };
  const auth = await workerAuth?.(worker.id);
  if (auth !== undefined) headers.authorization = auth;
  try {
    const over = worker.transport === "connection" ? streams?.(worker) : undefined;
    if (over) return await getOverStream(over, path, headers);
    const res = await doFetch(worker.url + path, {
      headers,
      signal: AbortSignal.timeout(CATALOG_FETCH_TIMEOUT_MS),
    });
    const body = await res.json().catch(() => undefined);
    return { status: res.status, body };
  } catch (err) {
    log("warn", "worker catalog unavailable", { worker_id: worker.id, error: (err as Error).name });
    return undefined;
  }
}

/** The request streams of a worker's connection held here (router/proxy/forward.ts). */
export type StreamsOf = (worker: WorkerRecord) => WorkerStreams | undefined;

/** GET `path` over a worker's connection, its JSON answer parsed (undefined when it is not). */
async function getOverStream(
  over: WorkerStreams,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: unknown }> {
  const res = await sendOverStream(over.mux, {
    base: "",
    method: "GET",
    path,
    headers,
    body: null,
    signal: AbortSignal.timeout(CATALOG_FETCH_TIMEOUT_MS),
  }, over.violation);
  if (res.kind !== "answer") throw new Error(res.kind);
  const text = await new Response(res.body as BodyInit | null).text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body };
}

/** True when any worker in scope has `model` loaded. */
function loadedAnywhere(workers: readonly WorkerRecord[], model: string): boolean {
  return workers.some((w) => modelsOf(w).get(model)?.state === "loaded");
}

/** The merged model list over `workers` (already scoped to a pool when the client named one). */
export async function listModels(
  workers: readonly WorkerRecord[],
  log: Logger,
  doFetch: typeof fetch = fetch,
  workerAuth?: WorkerAuth,
  streams?: StreamsOf,
): Promise<MergedModelInfo[]> {
  const reps = representatives(workers);
  const answered = new Set<string>();
  const merged = new Map<string, MergedModelInfo>();
  await Promise.all([...reps].map(async ([bundle, w]) => {
    const r = await fetchJson(w, "/v1/models", log, doFetch, workerAuth, streams);
    const list = (r?.body as { models?: unknown } | undefined)?.models;
    if (r?.status !== 200 || !Array.isArray(list)) return;
    answered.add(bundle);
    for (const m of list) {
      if (m && typeof m === "object" && typeof (m as MergedModelInfo).name === "string") {
        const info = m as MergedModelInfo;
        // A worker lists other bundles' models too; label each with its own bundle.
        const own = modelsOf(w).get(info.name)?.bundle ?? bundle;
        if (!merged.has(info.name)) merged.set(info.name, { ...info, bundle: own });
      }
    }
  }));
  for (const c of BUILTIN_CATALOG) {
    if (!answered.has(c.bundle) && !merged.has(c.id)) merged.set(c.id, catalogInfo(c));
  }
  const out = [...merged.values()];
  for (const info of out) {
    if (loadedAnywhere(workers, info.name)) {
      info.loaded = true;
      if ("state" in info) info.state = "loaded";
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

const CATALOG_BY_ID = catalogById(BUILTIN_CATALOG);

/** A catalog entry described without a worker (the same document a worker sends). */
function catalogInfo(config: ModelConfig, name?: string, modelProfile?: string): MergedModelInfo {
  return { ...modelInfoOf(config, { name, modelProfile }) };
}

/** The id a served name belongs to: itself when a worker reports it, else the part before `:`. */
function baseIdOf(model: string, workers: readonly WorkerRecord[]): string {
  if (workers.some((w) => modelsOf(w).has(model))) return model;
  const colon = model.lastIndexOf(":");
  if (colon > 0 && workers.some((w) => modelsOf(w).has(model.slice(0, colon)))) {
    return model.slice(0, colon);
  }
  return resolveServedName(model, CATALOG_BY_ID)?.config.id ?? model;
}

/**
 * One model's entry: from a worker that serves it (preferring one with it loaded), else from the
 * built-in catalog; undefined when nobody knows it. Never triggers a load.
 */
export async function getModel(
  workers: readonly WorkerRecord[],
  model: string,
  log: Logger,
  doFetch: typeof fetch = fetch,
  workerAuth?: WorkerAuth,
  streams?: StreamsOf,
): Promise<MergedModelInfo | undefined> {
  // Workers report ids; `id:profile` is looked up under its id and asked for by its full name.
  const id = baseIdOf(model, workers);
  const candidates = workers.filter((w) => !w.draining && modelsOf(w).has(id)).sort((a, b) =>
    Number(modelsOf(b).get(id)?.state === "loaded") -
    Number(modelsOf(a).get(id)?.state === "loaded")
  );
  for (const w of candidates.slice(0, 2)) {
    const path = `/v1/models/${encodeURIComponent(model)}`;
    const r = await fetchJson(w, path, log, doFetch, workerAuth, streams);
    if (r?.status === 200 && r.body && typeof r.body === "object") {
      const info = {
        ...(r.body as MergedModelInfo),
        bundle: modelsOf(w).get(id)?.bundle ?? w.bundle,
      };
      if (loadedAnywhere(workers, id)) {
        info.loaded = true;
        if ("state" in info) info.state = "loaded";
      }
      return info;
    }
  }
  const served = resolveServedName(model, CATALOG_BY_ID);
  return served ? catalogInfo(served.config, model, served.modelProfile) : undefined;
}
