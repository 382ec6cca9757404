/** Start an in-process router on 127.0.0.1 with a free port, for router unit tests. */
import { loadRouterSettings } from "@svc/router/settings";
import { type RunningRouter, type StartOptions, startRouter } from "#router/server.ts";

/** Worker token used by the tests (long enough for the router's minimum). */
export const TEST_TOKEN = "test-worker-token-0123456789abcdef";

/** A router plus the log lines it wrote. */
export interface TestRouter extends RunningRouter {
  logs: { level: string; msg: string; fields?: Record<string, unknown> }[];
}

/** Start a router with test defaults overridden by `env`. */
export async function startTestRouter(
  env: Record<string, string> = {},
  opts: StartOptions = {},
): Promise<TestRouter> {
  const logs: TestRouter["logs"] = [];
  const settings = loadRouterSettings({
    SVC_PORT: "0",
    SVC_HOST: "127.0.0.1",
    SVC_WORKER_TOKEN: TEST_TOKEN,
    // Far above any scheduling hiccup of a busy machine: only the tests of the stale bound,
    // which set their own, see a silent worker removed.
    SVC_WORKER_STALE_MS: "10000",
    SVC_HEARTBEAT_INTERVAL_MS: "200",
    SVC_STATUS_INTERVAL_MS: "200",
    SVC_UPSTREAM_TIMEOUT_MS: "5000",
    SVC_EMBEDDINGS_WAIT_MS: "300",
    // Pools without workers answer 202 at once (the start-up hold has tests of its own).
    SVC_STARTUP_HOLD_MS: "0",
    ...env,
  });
  const router = await startRouter(settings, {
    log: (level, msg, fields) => logs.push({ level, msg, fields }),
    ...opts,
  });
  return Object.assign(router, { logs });
}

/** A parsed JSON body; loose on purpose: tests check it field by field with assert. */
// deno-lint-ignore no-explicit-any
export type Json = any;

/** Fetch JSON from the router (body consumed). */
export async function getJson(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; headers: Headers; body: Json }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON; keep the text
  }
  return { status: res.status, headers: res.headers, body };
}
