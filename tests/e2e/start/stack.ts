/** The local stack (`deno task start`) as the start tests run it: a first run's environment. */
import type { Proc } from "../procs.ts";

/**
 * Environment of a first run: fresh caches under `xdg`, no model hub (nothing listens on port 9),
 * any free port, and no background GloVe build unless `extra` turns it on.
 */
export function firstRunEnv(
  xdg: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    XDG_CACHE_HOME: xdg,
    SVC_PORT: "0",
    SVC_HUB_URL: "http://127.0.0.1:9",
    SVC_MODELS_DIR: "",
    SVC_CLUSTER_CACHE: "",
    SVC_CACHE_DIR: "",
    SVC_OFFLINE_GLOVE: "0",
    ...extra,
  };
}

/** Wait for the stack's banner (API line, then the ready models); the API base URL. */
export async function stackUrl(proc: Proc): Promise<string> {
  const m = await proc.waitForLine(/^start: API:\s+(http:\/\/127\.0\.0\.1:\d+)\/v1\//, 120_000);
  await proc.waitForLine(/^start: offline models ready/, 5_000);
  return m[1];
}
