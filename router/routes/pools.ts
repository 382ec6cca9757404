/**
 * `/v1/pools`, the SIE clients' pool API, mapped onto this router's pools: a pool is a machine
 * profile (GPU type). Listing and reading work; creating a pool that is already accepted answers
 * it (idempotent). Pools are fixed by `SVC_MACHINE_PROFILES` (and the pools of registered
 * workers), so creating another one or deleting one at run time is a 501 that names the setting.
 */
import type { Context } from "hono";
import { decodeBody } from "@svc/shared/codec/decode";
import { invalidInput, ServiceError } from "@svc/shared/errors";
import { SLUG_RE } from "@svc/shared/fleet/protocol";
import { readBodyLimited } from "@svc/shared/http/read_body";
import type { PoolInfo } from "@svc/shared/schemas/router";
import type { RouterContext, RouterEnv } from "../context.ts";
import type { WorkerRecord } from "../directory/types.ts";
import { isAccepted, type ProfilePolicy } from "../pools/resolve.ts";

/** Path of the list, and of one pool (Hono syntax). */
export const POOLS_PATH = "/v1/pools";
export const POOL_PATH = "/v1/pools/:name";

/** Every accepted pool, sorted by name. */
export function listPools(policy: ProfilePolicy, workers: readonly WorkerRecord[]): PoolInfo[] {
  const names = new Set(policy.machineProfiles);
  if (policy.defaultMachineProfile) names.add(policy.defaultMachineProfile);
  for (const w of workers) names.add(w.pool);
  return [...names].sort().map((name) => poolInfo(name, policy, workers));
}

function poolInfo(name: string, policy: ProfilePolicy, workers: readonly WorkerRecord[]): PoolInfo {
  const members = workers.filter((w) => w.pool === name).sort((a, b) => a.id.localeCompare(b.id));
  const healthy = members.filter((w) => !w.draining).length;
  return {
    name,
    gpu: name,
    status: healthy > 0 ? "active" : "idle",
    configured: name === policy.defaultMachineProfile || policy.machineProfiles.includes(name),
    is_default: name === policy.defaultMachineProfile,
    worker_count: members.length,
    healthy_workers: healthy,
    gpu_count: members.reduce((n, w) => n + w.gpu_count, 0),
    bundles: [...new Set(members.map((w) => w.bundle))].sort(),
    workers: members.map((w) => w.id),
  };
}

/** Why pools cannot change at run time, and what to do instead. */
const FIXED_POOLS = "pools are the machine profiles this router accepts: list them in " +
  "SVC_MACHINE_PROFILES (and restart the router), and start workers with SVC_MACHINE_PROFILE " +
  "set to the pool";

/** `GET /v1/pools` */
export async function handleListPools(ctx: RouterContext): Promise<Response> {
  await ctx.directory.refresh();
  return Response.json({ pools: listPools(ctx.settings.pools, ctx.directory.snapshot()) });
}

/** `GET /v1/pools/{name}`: 404 for a pool the router does not accept. */
export async function handleGetPool(ctx: RouterContext, c: Context<RouterEnv>): Promise<Response> {
  await ctx.directory.refresh();
  const name = poolName(c.req.param("name"));
  const workers = ctx.directory.snapshot();
  if (!isAccepted(name, ctx.settings.pools, workers)) throw unknownPool(name);
  return Response.json(poolInfo(name, ctx.settings.pools, workers));
}

/**
 * `POST /v1/pools` with `{name}` (or `gpu`, `gpu_type`, `machine_profile`): an accepted pool is
 * answered as it is; any other is a 501 naming `SVC_MACHINE_PROFILES`.
 */
export async function handleCreatePool(
  ctx: RouterContext,
  c: Context<RouterEnv>,
): Promise<Response> {
  const bytes = await readBodyLimited(c.req.raw, ctx.body);
  const type = c.req.header("content-type") ?? "application/json";
  const body = decodeBody(bytes, type, ctx.settings.limits) as Record<string, unknown> | null;
  const raw = body?.name ?? body?.gpu ?? body?.gpu_type ?? body?.machine_profile;
  if (typeof raw !== "string" || raw.trim() === "") {
    throw invalidInput('a pool needs a `name` (a machine profile, e.g. "l4")');
  }
  const name = poolName(raw);
  await ctx.directory.refresh();
  const workers = ctx.directory.snapshot();
  if (isAccepted(name, ctx.settings.pools, workers)) {
    return Response.json(poolInfo(name, ctx.settings.pools, workers));
  }
  throw new ServiceError(
    "NOT_IMPLEMENTED",
    `pool "${name}" cannot be created at run time: ${FIXED_POOLS}`,
  );
}

/** `DELETE /v1/pools/{name}`: 404 for an unknown pool, else a 501 naming the setting. */
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
      "a pool name is a machine profile: a lower-case slug (a-z, 0-9, '.', '_', '-')",
    );
  }
  return name;
}

function unknownPool(name: string): ServiceError {
  return new ServiceError("NOT_FOUND", `no pool "${name}" (see GET /v1/pools)`);
}
