/**
 * Issue 37.1, the poisoning run with real processes: a router and a real worker serving
 * fixture/dense, and a rogue holding the worker token that reads the model's revision off a real
 * answer, registers announcing it, answers with forged vectors, and then leaves. Before, 7 of 20
 * queries it answered were still served forged from the cache after it left (6 of 20 on a keyed
 * router, where it was only `unverified-…`). Now, on an open router its entries leave with it,
 * and on a router with SVC_API_KEYS and SVC_WORKER_API_KEY they are never stored: after it
 * disconnects, 0 forged answers are in the cache.
 */
import assert from "node:assert/strict";
import {
  FLEET_TOKEN,
  fleetEnv,
  startRouterProcess,
  startWorkerProcess,
} from "../../observability/helpers/process.ts";
import { startFakeWorker } from "../../router/helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";

const CLIENT = "client-key-e2e-37-abcdef";
const ADMIN = "admin-key-e2e-37-0123456789";
const SECRET = "fleet-worker-secret-e2e-37-77aa";

interface Answer {
  status: number;
  cache: string | null;
  revision: string | null;
  /** True when the rogue computed it (its forged answers name it; real ones carry vectors). */
  forged: boolean;
}

async function poisoningRun(keyed: boolean): Promise<void> {
  const auth: Record<string, string> = keyed ? { authorization: `Bearer ${CLIENT}` } : {};
  const router = await startRouterProcess({
    SVC_DEFAULT_MACHINE_PROFILE: "cpu",
    ...(keyed ? { SVC_API_KEYS: CLIENT, SVC_ADMIN_KEYS: ADMIN, SVC_WORKER_API_KEY: SECRET } : {}),
  });
  let worker: Awaited<ReturnType<typeof startWorkerProcess>> | undefined;
  let rogue: ReturnType<typeof startFakeWorker> | undefined;
  const workers = async () =>
    (await (await fetch(`${router.url}/health`, {
      headers: keyed ? { authorization: `Bearer ${ADMIN}` } : {},
    })).json()).worker_count as number;
  const ask = async (text: string): Promise<Answer> => {
    const res = await fetch(`${router.url}/v1/encode/fixture%2Fdense`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...auth },
      body: JSON.stringify({ items: [{ text }] }),
    });
    const body = await res.json();
    return {
      status: res.status,
      cache: res.headers.get("x-svc-cache"),
      revision: res.headers.get("x-svc-model-revision"),
      forged: body.worker === "rogue",
    };
  };
  try {
    worker = await startWorkerProcess({
      ...fleetEnv(router.url, "real-1"),
      SVC_PRELOAD_MODELS: "fixture/dense",
      ...(keyed ? { SVC_WORKER_API_KEY: SECRET } : {}),
    });
    await waitFor(async () => (await workers()) === 1, "the real worker registered", 30_000);
    // The rogue reads the revision off any answer.
    const real = await ask("what revision is this");
    assert.equal(real.status, 200);
    const revision = real.revision!;
    assert.match(revision, /^[0-9a-f]{16,}$/);
    rogue = startFakeWorker({
      routerUrl: router.url,
      token: FLEET_TOKEN,
      id: "rogue",
      profile: "cpu",
      models: [{ name: "fixture/dense", state: "loaded", revision }],
    });
    await waitFor(async () => (await workers()) === 2, "the rogue registered", 30_000);
    // Queries until the rogue has answered some (the router spreads them by load).
    const queries: string[] = [];
    let forgedServed = 0;
    for (let i = 0; i < 200 && forgedServed < 5; i++) {
      const q = `query ${i}`;
      queries.push(q);
      const a = await ask(q);
      assert.equal(a.status, 200);
      if (a.forged) forgedServed++;
    }
    assert.ok(forgedServed >= 5, `the rogue answered ${forgedServed} of ${queries.length}`);
    await rogue.close();
    rogue = undefined;
    await waitFor(async () => (await workers()) === 1, "the rogue removed", 30_000);
    let forged = 0;
    let hits = 0;
    for (const q of queries) {
      const a = await ask(q);
      assert.equal(a.status, 200);
      if (a.forged) forged++;
      if (a.cache === "hit") hits++;
    }
    assert.equal(forged, 0, `forged answers served after the rogue left (${queries.length} asked)`);
    // The real worker's answers were cached as ever.
    assert.ok(hits >= queries.length - forgedServed - 1, `${hits} hits`);
    console.log(
      `  ${keyed ? "keyed" : "open"}: the rogue answered ${forgedServed} of ${queries.length}; ` +
        `after it left: ${forged} forged, ${hits} hits`,
    );
  } finally {
    await rogue?.close();
    await worker?.proc.stop();
    await router.proc.stop();
  }
}

Deno.test({
  name: "cache poisoning: a rogue's forged answers leave the cache with it (open router)",
  fn: () => poisoningRun(false),
});

Deno.test({
  name: "cache poisoning: an unverified rogue's answers are never stored (keyed router)",
  fn: () => poisoningRun(true),
});
