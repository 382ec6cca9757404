/**
 * Route then forward, for every request that names a model (encode, score, extract, embeddings):
 * the pool from the machine-profile header, the bundle from the model, a worker of that pool and
 * bundle by load and affinity. What happens when the pool has no serving worker is the caller's
 * choice: answer 202 at once (the native API), or wait for capacity and then 503 (OpenAI clients
 * take any 2xx as success).
 */
import type { Context } from "hono";
import { ALL_BUNDLES } from "@svc/shared/catalog/bundles";
import { ServiceError } from "@svc/shared/errors";
import { HeaderNames as H } from "@svc/shared/headers";
import type { BodyChunks, BodyReadOptions } from "@svc/shared/http/read_body";
import type { ProvisioningBody } from "@svc/shared/schemas/router";
import type { RouterContext, RouterEnv } from "../context.ts";
import { bearerToken } from "@svc/shared/http/secrets";
import { modelNotFound, requestedMachineProfile, routeModel } from "../pools/resolve.ts";
import { type AnswerShaper, forward } from "../proxy/forward.ts";
import { isServing } from "../pools/selection.ts";
import type { WorkerRecord } from "../directory/types.ts";

/** How often a request waiting for capacity looks again. */
const CAPACITY_POLL_MS = 200;

/** Where a request goes: its pool, bundle, the client's model name and the name workers use. */
interface Target {
  machineProfile: string;
  bundle: string;
  /** As the client wrote it (errors, demand). */
  model: string;
  /** As workers register it (`id` for a served `id:profile`). */
  workerModel: string;
  /** Nobody named the model: routed to the fallback bundle in case an empty pool serves it. */
  guessed: boolean;
}

/** What to do when the pool has no serving worker. */
export type WhenNoCapacity =
  | { kind: "provision" }
  | { kind: "wait"; untilMs: number };

/**
 * Forward a request for `model` and return the worker's answer, through the result cache when
 * it is on (router/cache/edge.ts: a stored answer, or that of an identical request in flight,
 * may answer instead). What needs no body is decided before any of it is read: 400 (profile),
 * 404 (a model the pool does not serve) and, when asked to provision, 202; the body is read
 * (within the body bounds and the in-flight budget) once a worker is selected for it, or, with
 * the cache on, once a serving worker offers the model. An answer given without reading the body
 * closes the connection (shared/http/node_server.ts), so nothing drains an unread body.
 */
export async function routeAndForward(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  model: string,
  readBody: () => Promise<BodyChunks>,
  whenNoCapacity: WhenNoCapacity,
): Promise<Response> {
  const target = await resolveHeld(ctx, c, model);
  // Read at most once, by the cache or by forwarding (however many times a wait forwards).
  let body: Promise<BodyChunks> | undefined;
  const bodyOnce = () => body ??= readBody();
  const send = (shape?: AnswerShaper) =>
    forwardUntilAnswered(ctx, c, target, bodyOnce, whenNoCapacity, shape);
  if (!ctx.cache) return await send();
  return await ctx.cache.answer({
    req: c.req.raw,
    pool: target.machineProfile,
    bundle: target.bundle,
    model: target.workerModel,
    // The key as presented (a client key or an admin key): one tenant never sees another's
    // answers or their timing. An open API (no SVC_API_KEYS) has no tenants to keep apart.
    tenant: ctx.access.apiKeys.empty ? "" : bearerToken(c.req.header("authorization")) ?? "",
    readBody: bodyOnce,
    send,
    timeoutMs: ctx.settings.upstreamTimeoutMs,
  });
}

/** Forward until a worker answers, or answer for the missing capacity (202, or wait then 503). */
async function forwardUntilAnswered(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  target: Target,
  bodyOnce: () => Promise<BodyChunks>,
  whenNoCapacity: WhenNoCapacity,
  shape: AnswerShaper | undefined,
): Promise<Response> {
  const proxyDeps = {
    directory: ctx.directory,
    load: ctx.load,
    metrics: ctx.metrics,
    log: ctx.log,
    upstreamTimeoutMs: ctx.settings.upstreamTimeoutMs,
    workerAuth: ctx.workerAuth,
    spillLoad: ctx.settings.pools.affinitySpillLoad,
    replay: ctx.replay,
    streams: (w: WorkerRecord) => ctx.hub.streamsOf(w.id, w.conn_id),
    relay: ctx.relay,
  };
  const upstream = {
    pool: target.machineProfile,
    bundle: target.bundle,
    model: target.workerModel,
  };
  let recorded = false;
  const started = Date.now();
  while (true) {
    const r = await forward(c.req.raw, bodyOnce, upstream, proxyDeps, c.env?.completed, shape);
    if (r.kind === "response") {
      c.set("worker", r.worker.id);
      // Which worker answered is fleet detail: clients see it only when a setting says so.
      if (ctx.settings.exposeWorkerId) r.response.headers.set(H.workerId, r.worker.id);
      ctx.demand.satisfied(target.machineProfile, target.bundle);
      return r.response;
    }
    if (r.kind === "not_served") throw notServed(ctx, target);
    if (r.kind === "elsewhere") {
      // Alive, but its connection is on another instance: it may be dialling this one now.
      const left = started + ctx.settings.provisioning.reconnectHoldMs - Date.now();
      if (left <= 0 || c.req.raw.signal.aborted) {
        throw new ServiceError(
          "NO_CAPACITY",
          `the workers of pool "${target.machineProfile}" are connected to other router ` +
            "instances only (no advertised URL): list every instance in the workers' " +
            "SVC_ROUTER_URL, or give them a reachable SVC_ADVERTISE_URL",
          { retryAfterS: 1 },
        );
      }
      await sleep(Math.min(CAPACITY_POLL_MS, Math.max(1, left)));
      continue;
    }
    const holdUntil = startupHoldEnd(ctx);
    if (whenNoCapacity.kind === "provision" && Date.now() >= holdUntil) {
      // Asked while the router was starting: its workers may be back in a moment.
      return provisioning(ctx, target, started <= holdUntil ? 1 : undefined);
    }
    // A provisioning request held at start-up is recorded by its 202, if it gets one.
    if (!recorded && whenNoCapacity.kind === "wait") {
      ctx.demand.record(target.machineProfile, target.bundle, target.model, target.guessed);
      recorded = true;
    }
    const until = whenNoCapacity.kind === "wait" ? whenNoCapacity.untilMs : holdUntil;
    const left = until - Date.now();
    if (left <= 0 || c.req.raw.signal.aborted) {
      throw new ServiceError(
        "NO_CAPACITY",
        `no worker of pool "${target.machineProfile}" serves bundle "${target.bundle}" yet; ${
          capacityNote(ctx)
        }`,
        { retryAfterS: ctx.settings.provisioning.retryAfterS },
      );
    }
    await sleep(Math.min(CAPACITY_POLL_MS, Math.max(1, left)));
  }
}

/**
 * Run `handle` with body-read options whose bytes stay in the in-flight budget until the answer
 * is complete: sent, or abandoned by the client (`completed` of the server). A body waiting for
 * capacity, or held while the worker answers (for a retry), is memory like one still arriving.
 * Without `completed` (an app called directly) the hold ends when the handler does.
 */
export async function withBodyHold(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  handle: (body: BodyReadOptions) => Promise<Response>,
): Promise<Response> {
  const budget = ctx.body.budget;
  if (!budget) return await handle(ctx.body);
  const hold = budget.hold();
  const completed = c.env?.completed;
  try {
    return await handle({ ...ctx.body, budget: undefined, hold });
  } finally {
    if (completed) completed.then(() => hold.release(), () => hold.release());
    else hold.release();
  }
}

/**
 * {@link resolveTarget}, waiting during the start-up hold when the pool is not known yet: a
 * profile is known once configured or registered by a worker, and after a restart the workers
 * that register it are a moment away. After the hold, its 400 (or 404) as ever.
 */
async function resolveHeld(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  model: string,
): Promise<Target> {
  while (true) {
    try {
      return resolveTarget(ctx, c, model);
    } catch (err) {
      const left = startupHoldEnd(ctx) - Date.now();
      // A pool named but unknown (400), or a model only workers know named with one (404); a
      // request that names no pool is what it is, however long it waits.
      const h = c.req.raw.headers;
      const named = h.has(H.machineProfile) || h.has(H.machineProfileAlias) || h.has(H.siePool);
      const unknownPool = named && err instanceof ServiceError &&
        (err.code === "INVALID_INPUT" || err.code === "MODEL_NOT_FOUND");
      if (!unknownPool || left <= 0 || c.req.raw.signal.aborted) throw err;
      await sleep(Math.min(CAPACITY_POLL_MS, left));
    }
  }
}

/**
 * Bundle from the model, then pool from the header (recorded for the access log): a name nobody
 * knows goes to the fallback bundle (`guessed`); 404 for a name that cannot be a model id. The
 * model is looked at first: an unknown model is a 404 with its suggestions, whatever the
 * profile, since no profile would make it served.
 */
function resolveTarget(ctx: RouterContext, c: Context<RouterEnv>, model: string): Target {
  const workers = ctx.directory.snapshot();
  const extra = ctx.settings.pools.extraModels;
  const route = routeModel(model, ctx.directory, extra);
  if (route === undefined) throw modelNotFound(model, ctx.directory, extra);
  let machineProfile: string;
  try {
    machineProfile = requestedMachineProfile(c.req.raw.headers, ctx.settings.pools, workers);
  } catch (err) {
    // A name nobody knows, whose pool cannot be told either: what it lacks first is a model.
    if (route.guessed) throw modelNotFound(model, ctx.directory, extra);
    throw err;
  }
  c.set("machineProfile", machineProfile);
  // Labelled only once the name is known: metric label values stay bounded.
  if (!route.guessed) c.set("model", model);
  // A worker serving every bundle announces all it has: a name it did not announce is a 404
  // there, not a pool to provision.
  const everyBundle = route.guessed &&
    workers.some((w) => isServing(w, machineProfile, ALL_BUNDLES));
  return {
    machineProfile,
    bundle: everyBundle ? ALL_BUNDLES : route.bundle,
    model,
    workerModel: route.model,
    guessed: route.guessed === true,
  };
}

/**
 * What happens about the missing capacity: an autoscaler is asked only when a webhook is set
 * (KEDA-style scalers read the demand gauge instead, which the router cannot know about).
 */
function capacityNote(ctx: RouterContext): string {
  return ctx.settings.provisioning.webhook
    ? "capacity has been requested"
    : "no autoscaler webhook is configured (SVC_PROVISION_WEBHOOK), so start a worker of that " +
      "pool and bundle, or scale on svc_router_pending_demand";
}

/**
 * When the router's start-up hold ends (SVC_STARTUP_HOLD_MS): until then a request whose pool
 * has no serving worker waits for one, since after a restart workers reconnect within a second or
 * two and a 202 would send every client away for `SVC_PROVISION_RETRY_AFTER_S`.
 */
function startupHoldEnd(ctx: RouterContext): number {
  return ctx.startedAt === undefined ? 0 : ctx.startedAt + ctx.settings.provisioning.startupHoldMs;
}

/** 202 with Retry-After (`retryAfterS`, else the setting), the demand recorded. */
function provisioning(ctx: RouterContext, t: Target, retryAfterS?: number): Response {
  const entry = ctx.demand.record(t.machineProfile, t.bundle, t.model, t.guessed);
  const retry = retryAfterS ?? ctx.settings.provisioning.retryAfterS;
  const body: ProvisioningBody = {
    status: "provisioning",
    machine_profile: t.machineProfile,
    bundle: t.bundle,
    model: t.model,
    retry_after_s: retry,
    pending: entry.pending,
    message: `no worker of pool "${t.machineProfile}" serves bundle "${t.bundle}" yet; ${
      capacityNote(ctx)
    }, retry after ${retry} s`,
  };
  return new Response(JSON.stringify(body), {
    status: 202,
    headers: { "content-type": "application/json", [H.retryAfter]: String(retry) },
  });
}

/**
 * 404 for a model its pool does not offer (filtered out on those workers, or unknown), naming
 * the closest model names the router knows.
 */
function notServed(ctx: RouterContext, t: Target): ServiceError {
  return modelNotFound(
    t.model,
    ctx.directory,
    ctx.settings.pools.extraModels,
    t.guessed
      ? "is not in the catalog"
      : `is not served by the workers of pool "${t.machineProfile}" (bundle "${t.bundle}")`,
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
