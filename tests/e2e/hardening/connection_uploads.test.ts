/**
 * Issue 33 against a real router process with its default settings, over the connection
 * transport: 24 clients post a 31 MB encode body each at once to a worker that takes its requests
 * over the WebSocket it dialled, and the router's resident memory grows by less than 300 MB while a
 * 1-item request to the same worker, sent meanwhile, is answered within 1 s (per-stream credit:
 * the uploads' frames do not hold it up), or within 1 s of a /healthz sent beside it while this
 * process's own uploads stall the router's event loop (measured here: /healthz 0.9 s at the first
 * probe, over either transport). The worker is a fake in a process of its own that reads
 * and sums each body, so only the router and the transport are measured.
 */
import assert from "node:assert/strict";
import { startRouterProcess } from "../../observability/helpers/process.ts";
import { byteSum } from "../../router/helpers/socket_worker.ts";
import { rssMiB, socketWorkerProcess, waitForWorkers } from "../../hardening/helpers.ts";

/** VmHWM (peak RSS) of process `pid`, in MiB. */
async function peakMiB(pid: number): Promise<number> {
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/status`] }).output();
  const status = new TextDecoder().decode(out.stdout);
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

function post(url: string, body: Uint8Array<ArrayBuffer>) {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "cache-control": "no-store" },
    body,
    signal: AbortSignal.timeout(60_000),
  }).then(async (res) => ({ status: res.status, text: await res.text() }))
    // The router may close a refused upload's connection before the client has sent it all.
    .catch((err) => ({ status: 0, text: String(err) }));
}

Deno.test({
  name:
    "connection uploads: 24 × 31 MB raise router RSS < 300 MB; a 1-item request meanwhile < 1 s",
  async fn() {
    const r = await startRouterProcess({ SVC_DEFAULT_MACHINE_PROFILE: "cpu" });
    const pid = r.proc.child.pid;
    const w = socketWorkerProcess(r.url, "upload-worker", "connection");
    try {
      await waitForWorkers(r.url, 1);
      const health = await (await fetch(`${r.url}/health`)).json();
      assert.equal(health.workers[0].transport, "connection");
      const encode = `${r.url}/v1/encode/fixture%2Fdense`;
      const body = new TextEncoder().encode(
        JSON.stringify({ items: [{ text: "a".repeat(31_000_000) }] }),
      );
      const small = new TextEncoder().encode(JSON.stringify({ items: [{ text: "one item" }] }));
      // Warm every path once (a 31 MB body included) before the baseline.
      assert.equal((await post(encode, body)).status, 200);
      assert.equal((await post(encode, small)).status, 200);
      const before = await rssMiB(pid);

      const uploads = Promise.all(Array.from({ length: 24 }, () => post(encode, body)));
      // Each 1-item request has a /healthz beside it: what the router's own event loop costs
      // while it reads the uploads from this process (the same over either transport, and
      // nothing of the worker's) is told apart from what waits for the worker.
      const probes: { ms: number; status: number; healthz: number }[] = [];
      for (let i = 0; i < 10; i++) {
        await new Promise((resolve) => setTimeout(resolve, 150));
        const started = performance.now();
        const hz = fetch(`${r.url}/healthz`).then(async (x) => {
          await x.body?.cancel();
          return performance.now() - started;
        });
        const res = await post(encode, small);
        probes.push({ ms: performance.now() - started, status: res.status, healthz: await hz });
      }
      const done = await uploads;
      const growth = (await peakMiB(pid)) - before;
      const ok = done.filter((d) => d.status === 200);
      console.log(
        `router RSS +${growth.toFixed(0)} MB at its peak; uploads ${ok.length} × 200, ` +
          `${done.filter((d) => d.status === 503).length} × 503; 1-item requests meanwhile ` +
          probes.map((p) => `${p.ms.toFixed(0)} ms (healthz ${p.healthz.toFixed(0)})`).join(", "),
      );
      assert.ok(growth < 300, `router RSS grew by ${growth.toFixed(0)} MB`);
      for (const p of probes) {
        assert.equal(p.status, 200);
        assert.ok(
          p.ms < 1000 || p.ms - p.healthz < 1000,
          `a 1-item request took ${p.ms.toFixed(0)} ms (healthz ${p.healthz.toFixed(0)} ms)`,
        );
      }
      assert.ok(ok.length > 0, "some uploads got through");
      for (const d of ok) {
        const got = JSON.parse(d.text);
        assert.equal(got.bytes, body.length, "forwarded whole");
        assert.equal(got.sum, byteSum(body), "forwarded intact");
      }
      for (const d of done) assert.ok([200, 503, 0].includes(d.status), d.text);
    } finally {
      await w.stop();
      await r.proc.stop();
    }
  },
});
