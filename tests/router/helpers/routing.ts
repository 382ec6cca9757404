/** Shared setup of routing.test.ts and routing_access.test.ts. */
import { type FakeWorker, startFakeWorker } from "./fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startTestRouter, TEST_TOKEN, type TestRouter } from "./router.ts";
export type Spec = {
  id: string;
  profile: string;
  bundle?: string;
  models: { name: string; bundle?: string; state?: "loaded" | "available" }[];
  hold?: Promise<unknown>;
};

/** A hold for fake workers' answers, and its release. */
export function held(): { promise: Promise<void>; release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((r) => release = r);
  return { promise, release };
}

/** Encode requests a fake worker has received. */
export function encodes(w: FakeWorker): number {
  return w.requests.filter((q) => q.path.startsWith("/v1/encode/")).length;
}

/** Router plus workers; everything is closed by the returned `close`. */
export async function cluster(
  env: Record<string, string>,
  specs: Spec[],
): Promise<{ r: TestRouter; ws: FakeWorker[]; close: () => Promise<void> }> {
  // Which worker answered is what these tests check: the debug header says it.
  const r = await startTestRouter({ SVC_EXPOSE_WORKER_ID: "1", ...env });
  const ws = specs.map((s) => startFakeWorker({ routerUrl: r.url, token: TEST_TOKEN, ...s }));
  try {
    await waitFor(() => ws.every((w) => w.link.connected), "workers to register");
  } catch (err) {
    for (const w of ws) await w.close();
    await r.close();
    throw err;
  }
  return {
    r,
    ws,
    close: async () => {
      for (const w of ws) await w.close();
      await r.close();
    },
  };
}

export function post(
  url: string,
  headers: Record<string, string> = {},
  body = "{}",
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

export const CPU = { "x-svc-machine-profile": "cpu", "content-type": "application/json" };
export const DENSE = { name: "fixture/dense" };
