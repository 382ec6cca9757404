/**
 * `npm start` as a person runs it (npm → sh → npm's deno wrapper → deno task → deno run), on a
 * port chosen up front so that /readyz is polled from the moment the command begins:
 * - ready means ready: no request sent after a 200 from /readyz gets a 202 (the stack is not
 *   ready before its own worker has registered);
 * - `deno task status` and `deno task drain` work against it without any key (loopback);
 * - SIGTERM to npm's own process stops the whole stack (npm passes it on to nothing that would
 *   stop the server; the stack watches its launchers).
 */
import assert from "node:assert/strict";
import { Proc } from "../procs.ts";
import { firstRunEnv } from "./stack.ts";
import { runTask } from "./tasks.ts";
import { waitFor } from "../../helpers/wait.ts";

/** A port nobody listens on right now (the stack binds it a moment later). */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Status of a GET, or 0 when nothing answers (refused, reset). */
async function statusOf(url: string): Promise<number> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}

/** One small encode request through the stack. */
async function encodeStatus(base: string): Promise<number> {
  const res = await fetch(`${base}/v1/encode/fixture/dense`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ items: [{ text: "ready means ready" }] }),
    signal: AbortSignal.timeout(60_000),
  });
  await res.body?.cancel();
  return res.status;
}

Deno.test({
  name:
    "npm start: /readyz 200 means served (no 202 after it), drain works, SIGTERM to npm stops it",
  fn: async () => {
    const xdg = await Deno.makeTempDir({ prefix: "svc-npm-start-" });
    const port = freePort();
    const base = `http://127.0.0.1:${port}`;
    // The embedded worker's own port, for its /metrics (the router reaches it over its connection).
    const workerPort = freePort();
    const proc = new Proc(
      "npm-start",
      ["start"],
      firstRunEnv(xdg, { SVC_PORT: String(port), SVC_WORKER_PORT: String(workerPort) }),
      "npm",
    );
    try {
      // Poll from the first moment: before the first 200 anything goes (refused, 503, 202);
      // from the first 200 on, every request must be served.
      const seen: number[] = [];
      await waitFor(
        async () => {
          const s = await statusOf(`${base}/readyz`);
          if (seen.at(-1) !== s) seen.push(s);
          return s === 200;
        },
        "/readyz 200",
        { timeoutMs: 120_000, everyMs: 5, proc: procWatch(proc) },
      );
      for (let i = 0; i < 5; i++) {
        const s = await encodeStatus(base);
        assert.equal(
          s,
          200,
          `request ${i} after /readyz 200 (readyz answered ${seen.join(" → ")})`,
        );
      }
      // The banner is no earlier than readiness either.
      await proc.waitForLine(/^start: API:/, 30_000);
      const ready = await (await fetch(`${base}/readyz`)).json();
      assert.equal(ready.default_pool.serving_workers, 1);

      // Ops against the local stack: no key needed from this machine.
      const env = { SVC_PORT: String(port) };
      const status = await runTask("status", [], env);
      assert.equal(status.code, 0, status.stderr);
      const row = status.stdout.split("\n").find((l) =>
        /\sserving\s/.test(l) && /^\S+\s+cpu\s/.test(l)
      );
      assert.ok(row, status.stdout);
      const workerId = row.split(/\s+/)[0];
      const health = await (await fetch(`${base}/health`)).json();
      const workerUrl = `http://127.0.0.1:${workerPort}`;
      // The memory the router shows is the worker's own (its resident set), not the host's.
      const metrics = await (await fetch(`${workerUrl}/metrics`)).text();
      const rss = Number(/^process_resident_memory_bytes (\S+)$/m.exec(metrics)?.[1]);
      const shown: number = health.workers[0].memory_used_bytes;
      assert.ok(rss > 0 && Math.abs(shown - rss) < rss / 2, `shown ${shown}, RSS ${rss}`);
      const drain = await runTask("drain", [workerId], env);
      assert.equal(drain.code, 0, drain.stderr);
      assert.match(drain.stdout, new RegExp(`^worker ${workerId} is draining`));
      // No serving worker left: not ready, and it says why.
      const after = await fetch(`${base}/readyz`);
      assert.equal(after.status, 503);
      assert.match((await after.json()).message, /no worker serves the default pool/);

      // SIGTERM to npm itself: router and worker both stop.
      proc.signal("SIGTERM");
      await waitFor(async () => await statusOf(`${base}/healthz`) === 0, "router port closed", {
        timeoutMs: 30_000,
        everyMs: 100,
      });
      await waitFor(async () => await statusOf(`${workerUrl}/healthz`) === 0, "worker closed", {
        timeoutMs: 10_000,
        everyMs: 100,
      });
      await proc.stop(1000);
      assert.ok(
        proc.lines.some((l) => /^start: launcher process \d+ exited; stopping the stack/.test(l)),
        proc.tail(),
      );
    } finally {
      await proc.kill().catch(() => {});
      await Deno.remove(xdg, { recursive: true });
    }
  },
});

/** The wait fails at once, with the output, if npm exits before the stack is ready. */
function procWatch(proc: Proc) {
  let done = false;
  proc.status.then(() => done = true);
  return { running: () => !done, tail: () => proc.tail() };
}
