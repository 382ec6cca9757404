/**
 * Issue 23.1 through the router, with real processes: a request that kills any worker it reaches
 * kills one, not the pool. A router process in front of two worker processes that exit on
 * receiving a poison request (the way the 100 KB relations request took them down): the client
 * gets 502 WORKER_LOST, the second worker never sees the request and stays alive and registered,
 * and the next request is served by it, where before the router replayed the poison on the second
 * worker and the pool was left empty (every client got 202 until a restart).
 */
import assert from "node:assert/strict";
import { startRouterProcess } from "../../observability/helpers/process.ts";
import { socketWorkerProcess, waitForWorkers, within } from "../../hardening/helpers.ts";

Deno.test({
  name: "poison request: a worker that dies of a request is its only victim; 502 WORKER_LOST",
  async fn() {
    const r = await startRouterProcess({ SVC_DEFAULT_MACHINE_PROFILE: "cpu" });
    const workers = [socketWorkerProcess(r.url, "crash-a"), socketWorkerProcess(r.url, "crash-b")];
    try {
      await waitForWorkers(r.url, 2);
      const post = (poison: boolean) =>
        fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(poison ? { "x-trace-id": "poison" } : {}),
          },
          body: JSON.stringify({ items: [{ text: "x".repeat(100_000) }] }),
          signal: AbortSignal.timeout(30_000),
        });
      const res = await post(true);
      const body = await res.json();
      assert.equal(res.status, 502);
      assert.equal(body.detail.code, "WORKER_LOST");
      assert.match(body.detail.message, /not retried on another worker/);
      assert.equal(res.headers.get("x-should-retry"), "false");

      // Exactly one worker died; the other never saw the request and is still registered.
      const dead = await within(
        Promise.race(workers.map((w, i) => w.status.then(() => i))),
        10_000,
        "the poisoned worker to exit",
      );
      const survivor = workers[1 - dead];
      assert.ok(survivor.running(), "the other worker is alive");
      await waitForWorkers(r.url, 1);
      const health = await (await fetch(`${r.url}/health`)).json();
      assert.equal(health.workers.length, 1);

      // The pool still serves: the next request is answered by the survivor (not a 202).
      const next = await post(false);
      assert.equal(next.status, 200);
      const served = await next.json();
      assert.equal(served.worker, health.workers[0].id);
      assert.equal(served.bytes > 100_000, true);
      assert.ok(survivor.running());
      assert.match(r.proc.stdout(), /worker dropped a request it had received/);
    } finally {
      for (const w of workers) await w.stop();
      await r.proc.stop();
    }
  },
});
