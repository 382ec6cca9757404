/**
 * `/v1/pools`, the SIE clients' pool API, mapped onto this router's pools, which the settings and
 * the workers fix: listing, reading, renewing and creating an accepted pool work, other changes
 * are a 501 naming the settings (docs/api.md, "Router").
 */
import type { Context } from "hono";
import { decodeRequest } from "@svc/shared/codec/parse";
import { invalidInput, ServiceError } from "@svc/shared/errors";
import { SLUG_RE } from "@svc/shared/fleet/protocol";
import { readBodyLimited } from "@svc/shared/http/read_body";
import type { PoolInfo } from "@svc/shared/schemas/router";
import { CreatePoolRequestSchema } from "@svc/shared/schemas/pools";
import type { RouterContext, RouterEnv } from "../context.ts";
import type { WorkerRecord } from "../directory/types.ts";
import { isAccepted, type MachineProfilePolicy, poolGpuTypes } from "../pools/resolve.ts";

/** Path of the list, of one pool, and of a pool's lease renewal (Hono syntax). */
export const POOLS_PATH = "/v1/pools";
export const POOL_PATH = "/v1/pools/:name";
export const POOL_RENEW_PATH = "/v1/pools/:name/renew";

/** Every accepted pool, sorted by name. */
export function listPools(
  policy: MachineProfilePolicy,
  workers: readonly WorkerRecord[],
): PoolInfo[] {
  const names = new Set(policy.machineProfiles);
  if (policy.defaultMachineProfile) names.add(policy.defaultMachineProfile);
  for (const w of workers) names.add(w.pool);
  return [...names].sort().map((name) => poolInfo(name, policy, workers));
}

function poolInfo(
  name: string,
  policy: MachineProfilePolicy,
  workers: readonly WorkerRecord[],
): PoolInfo {
  const members = workers.filter((w) => w.pool === name).sort((a, b) => a.id.localeCompare(b.id));
  const healthy = members.filter((w) => !w.draining).length;
  const gpus: Record<string, number> = {};
  for (const w of members) gpus[w.machine_profile] = (gpus[w.machine_profile] ?? 0) + 1;
  if (members.length === 0) gpus[name] = 0;
  const state = healthy > 0 ? "active" : "pending";
  return {
    name,
    gpu: members.length > 0 ? Object.keys(gpus).sort().join(",") : name,
    state,
    gpus,
    spec: { gpus: { ...gpus }, bundle: null, minimum_worker_count: 0 },
    status: {
      state,
      assigned_workers: members.map((w) => ({ name: w.id, url: w.url, gpu: w.machine_profile })),
    },
    configured: name === policy.defaultMachineProfile || policy.machineProfiles.includes(name),
    is_default: name === policy.defaultMachineProfile,
    worker_count: members.length,
    healthy_workers: healthy,
    gpu_count: members.reduce((n, w) => n + w.gpu_count, 0),
    bundles: [...new Set(members.map((w) => w.bundle))].sort(),
    workers: members.map((w) => w.id),
  };
}

/**
 * A pool as a client without fleet detail rights sees it: its workers counted and typed, not
 * named or located (worker ids and URLs are fleet detail, router/auth/access.ts).
 */
function clientPool(p: PoolInfo): PoolInfo {
  return {
    ...p,
    status: {
      ...p.status,
      assigned_workers: p.status.assigned_workers.map((w, i) => ({
        name: `worker-${i + 1}`,
        url: "",
        gpu: w.gpu,
      })),
    },
    workers: [],
  };
}

/** `p` as the caller may see it. */
function shown(p: PoolInfo, detail: boolean): PoolInfo {
  return detail ? p : clientPool(p);
}

/** Why pools cannot change at run time, and what to do instead. */
const FIXED_POOLS = "pools here are fixed: a pool is the workers started with SVC_POOL (by " +
  "default their SVC_MACHINE_PROFILE) set to its name, and the router accepts the pools " +
  "SVC_MACHINE_PROFILES lists (restart it to change them) and those of registered workers";

/** `GET /v1/pools` */
export async function handleListPools(ctx: RouterContext, detail: boolean): Promise<Response> {
  await ctx.directory.refresh();
  const pools = listPools(ctx.settings.pools, ctx.directory.snapshot());
  return Response.json({ pools: pools.map((p) => shown(p, detail)) });
}

/** `GET /v1/pools/{name}`: 404 for a pool the router does not accept. */
export async function handleGetPool(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  detail: boolean,
): Promise<Response> {
  await ctx.directory.refresh();
  const name = poolName(c.req.param("name"));
  const workers = ctx.directory.snapshot();
  if (!isAccepted(name, ctx.settings.pools, workers)) throw unknownPool(name);
  return Response.json(shown(poolInfo(name, ctx.settings.pools, workers), detail));
}

/**
 * `POST /v1/pools` with the SIE clients' `{name, gpus: {profile: count}, bundle?,
 * minimum_worker_count?}` (or `gpu`, `gpu_type`, `machine_profile` in place of `name`): an
 * accepted pool whose GPU types are the ones asked for is answered as it is (200; counts, bundle
 * and minimum are not reserved: every worker of the pool serves every client); anything else is
 * a 501 naming the settings.
 */
export async function handleCreatePool(
  ctx: RouterContext,
  c: Context<RouterEnv>,
  detail: boolean,
): Promise<Response> {
  const bytes = await readBodyLimited(c.req.raw, ctx.body, c.env?.body);
  const type = c.req.header("content-type") ?? "application/json";
  const body = decodeRequest(CreatePoolRequestSchema, bytes, type, ctx.settings.limits);
  const name = poolName(body.name);
  const asked = Object.keys(body.gpus).map(gpuType);
  await ctx.directory.refresh();
  const workers = ctx.directory.snapshot();
  if (!isAccepted(name, ctx.settings.pools, workers)) {
    throw new ServiceError(
      "NOT_IMPLEMENTED",
      `pool "${name}" cannot be created at run time: ${FIXED_POOLS}`,
    );
  }
  const runs = poolGpuTypes(name, workers);
  const has = runs.length > 0 ? runs : [name];
  const other = asked.filter((g) => !has.includes(g));
  if (other.length > 0) {
    throw new ServiceError(
      "NOT_IMPLEMENTED",
      `pool "${name}" runs machine profile ${has.map((g) => `"${g}"`).join(", ")}, not ` +
        `${other.map((g) => `"${g}"`).join(", ")}; a pool of other GPU types cannot be made at ` +
        `run time: ${FIXED_POOLS}`,
    );
  }
  return Response.json(shown(poolInfo(name, ctx.settings.pools, workers), detail));
}

/**
 * `POST /v1/pools/{name}/renew` (the SIE clients renew their pools' leases every minute): pools
 * here hold no lease, so an accepted pool answers 200 and an unknown one 404.
 */
export async function handleRenewPool(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  await ctx.directory.refresh();
  const name = poolName(c.req.param("name"));
  if (!isAccepted(name, ctx.settings.pools, ctx.directory.snapshot())) throw unknownPool(name);
  return Response.json({
    name,
    message: `pool "${name}" has no lease to renew: pools here do not expire`,
  });
}

/** `DELETE /v1/pools/{name}`: 404 for an unknown pool, else a 501 naming the settings. */
export async function handleDeletePool(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  await ctx.directory.refresh();
  const name = poolName(c.req.param("name"));
  if (!isAccepted(name, ctx.settings.pools, ctx.directory.snapshot())) throw unknownPool(name);
  throw new ServiceError(
    "NOT_IMPLEMENTED",
    `pool "${name}" cannot be deleted at run time: ${FIXED_POOLS} (workers of a pool leave ` +
      `the router when they stop)`,
  );
}

/** A pool name from the client, checked (a slug, like every profile). */
function poolName(raw: string | undefined): string {
  const name = (raw ?? "").trim().toLowerCase();
  if (!SLUG_RE.test(name)) {
    throw invalidInput(
      "a pool name is a lower-case slug (a-z, 0-9, '.', '_', '-'), like a machine profile",
    );
  }
  return name;
}

/** A GPU type the client named in `gpus`, checked (a machine profile: a slug). */
function gpuType(key: string): string {
  const g = key.trim().toLowerCase();
  if (!SLUG_RE.test(g)) throw invalidInput("`gpus` keys are machine profiles (lower-case slugs)");
  return g;
}

function unknownPool(name: string): ServiceError {
  return new ServiceError("NOT_FOUND", `no pool "${name}" (see GET /v1/pools)`);
}
