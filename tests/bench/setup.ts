/**
 * Bringing the system under test up: the router (optional: left out with a reason when it does
 * not start or no worker registers), the worker joined to it (its requests over the connection it
 * dialled), a second router reaching the same worker over HTTP, and a checked first answer.
 */
import { decodeMsgpackResponse } from "../helpers/msgpack_response.ts";
import { encodeBody } from "./load_core.ts";
import {
  BENCH_MODEL,
  linkOverHttp,
  PROFILE_HEADER,
  type Service,
  startRouter,
  startWorker,
  waitForFleet,
} from "./services.ts";
import type { FleetLink } from "#worker/fleet/mod.ts";

/** The running services; `routerWhy` says why the router is not measured (null when it is). */
export interface Services {
  worker: Service;
  /** The router the worker dialled: requests go over that connection. */
  router?: Service;
  /** A second router that reaches the same worker over HTTP (the HTTP transport beside it). */
  routerHttp?: Service;
  routerWhy: string | null;
  /** Kill everything that was started (safe to call once setup failed half-way). */
  stop(): Promise<void>;
}

/** Dense vector width of bench-small, checked on the first answer. */
const DIMS = 384;

/** Start the router (when wanted) and the worker; the router is dropped, not fatal, on failure. */
export async function startServices(
  fixturesDir: string,
  withRouter: boolean,
  workerEntry?: string,
): Promise<Services> {
  let router: Service | undefined;
  let routerHttp: Service | undefined;
  let link: FleetLink | undefined;
  let routerWhy: string | null = withRouter ? null : "disabled with --no-router";
  if (withRouter) {
    try {
      router = await startRouter();
      routerHttp = await startRouter();
    } catch (err) {
      routerWhy = `router did not start: ${firstLine(err)}`;
      await router?.proc.kill();
      router = undefined;
    }
  }
  const worker = await startWorker({
    fixturesDir,
    routerUrl: router?.url,
    entry: workerEntry,
  }).catch(async (err) => {
    await Promise.all([router?.proc.kill(), routerHttp?.proc.kill()]);
    throw err;
  });
  const stop = async () => {
    await link?.close();
    await Promise.all([worker.proc.kill(), router?.proc.kill(), routerHttp?.proc.kill()]);
  };
  try {
    await checkAnswer(worker, {});
    if (router) {
      try {
        await waitForFleet(router, 20_000);
        await checkAnswer(router, PROFILE_HEADER);
      } catch (err) {
        routerWhy = `router not usable: ${firstLine(err)}`;
        await Promise.all([router.proc.kill(), routerHttp?.proc.kill()]);
        router = routerHttp = undefined;
      }
    }
    if (routerHttp) {
      try {
        link = linkOverHttp(routerHttp.url, worker.url);
        await waitForFleet(routerHttp, 20_000);
        await checkAnswer(routerHttp, PROFILE_HEADER);
      } catch {
        await link?.close();
        link = undefined;
        await routerHttp.proc.kill();
        routerHttp = undefined;
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { worker, router, routerHttp, routerWhy, stop };
}

/** One encode request must come back 200 with one 384-float dense vector. */
async function checkAnswer(svc: Service, headers: Record<string, string>): Promise<void> {
  const res = await fetch(`${svc.url}/v1/encode/${encodeURIComponent(BENCH_MODEL)}`, {
    method: "POST",
    headers: { "content-type": "application/msgpack", accept: "application/msgpack", ...headers },
    body: encodeBody(["a quick check of the answer"]),
    signal: AbortSignal.timeout(60_000),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (res.status !== 200) {
    throw new Error(
      `HTTP ${res.status} from ${svc.url}: ${new TextDecoder().decode(bytes).slice(0, 300)}`,
    );
  }
  const body = decodeMsgpackResponse(bytes) as { items?: { dense?: { values?: unknown } }[] };
  const values = body.items?.[0]?.dense?.values;
  if (!(values instanceof Float32Array) || values.length !== DIMS) {
    throw new Error(`unexpected answer from ${svc.url}: no ${DIMS}-float dense vector`);
  }
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n")[0];
}
