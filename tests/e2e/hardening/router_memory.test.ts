/**
 * Issue 23.4 against a real router process with its default settings: 24 clients post a 31 MB
 * encode body each at once (and as many 404- and 202-bound ones), and the router's resident memory
 * grows by less than 300 MB (it grew from 73 to about 1,150 MB when the budget covered only bodies
 * being read). Bodies beyond the in-flight budget get 503 QUEUE_FULL with Retry-After, the ones
 * admitted reach the worker intact, and nothing stays counted afterwards. The worker is a fake on
 * node:http in a process of its own (it reads and sums each body): only the router's memory is
 * measured, and the load on this process cannot silence the worker's fleet link.
 */
import assert from "node:assert/strict";
import { startRouterProcess } from "../../observability/helpers/process.ts";
import { waitFor } from "../../helpers/wait.ts";
import { byteSum } from "../../router/helpers/socket_worker.ts";
import { socketWorkerProcess, waitForWorkers } from "../../hardening/helpers.ts";

/** VmRSS and VmHWM (peak) of process `pid`, in MiB (through `cat`: Deno reads /proc only with -A). */
async function memory(pid: number): Promise<{ rss: number; peak: number }> {
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/status`] }).output();
  const status = new TextDecoder().decode(out.stdout);
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)![1]);
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

/** `count` parallel POSTs of `body` to `url`; their statuses, bodies and Retry-After. */
function flood(url: string, body: Uint8Array<ArrayBuffer>, count: number, profile = "cpu") {
  return Promise.all(Array.from({ length: count }, async () => {
    try {
      const res = await fetch(url, {
        method: "POST",
        // Past the result cache: identical bodies in flight together would be coalesced into
        // one upstream request, and this is about each body the router holds and forwards.
        headers: {
          "content-type": "application/json",
          "x-svc-machine-profile": profile,
          "cache-control": "no-store",
        },
        body,
        signal: AbortSignal.timeout(60_000),
      });
      return {
        status: res.status,
        retryAfter: res.headers.get("retry-after"),
        text: await res.text(),
      };
    } catch (err) {
      // The router may close a refused upload's connection before the client has sent it all.
      return { status: 0, retryAfter: null, text: String(err) };
    }
  }));
}

Deno.test({
  name: "router memory: 24 parallel 31 MB encodes raise router RSS by less than 300 MB",
  async fn() {
    const r = await startRouterProcess({ SVC_MACHINE_PROFILES: "cpu,gpu" });
    const pid = r.proc.child.pid;
    const w = socketWorkerProcess(r.url, "memory-worker");
    try {
      await waitForWorkers(r.url, 1);
      const text = "a".repeat(31_000_000);
      const body = new TextEncoder().encode(JSON.stringify({ items: [{ text }] }));
      const encode = `${r.url}/v1/encode/fixture%2Fdense`;
      // Warm every path once (a 31 MB body included) before the baseline.
      const warm = await flood(encode, body, 1);
      assert.equal(warm[0].status, 200);
      const before = await memory(pid);

      const notFound = await flood(`${r.url}/v1/encode/acme%2Fnone`, body, 24);
      const provisioning = await flood(encode, body, 24, "gpu");
      const encodes = await flood(encode, body, 24);
      const after = await memory(pid);
      const growth = after.peak - before.rss;
      console.log(
        `router RSS ${before.rss.toFixed(0)} MB before, peak ${after.peak.toFixed(0)} MB ` +
          `(+${growth.toFixed(0)} MB); encodes: ${encodes.filter((e) => e.status === 200).length}` +
          ` × 200, ${encodes.filter((e) => e.status === 503).length} × 503`,
      );
      assert.ok(growth < 300, `router RSS grew by ${growth.toFixed(0)} MB`);

      for (const a of notFound) assert.ok(a.status === 404 || a.status === 0, a.text);
      for (const a of provisioning) assert.ok(a.status === 202 || a.status === 0, a.text);
      assert.ok(notFound.some((a) => a.status === 404));
      assert.ok(provisioning.some((a) => a.status === 202));
      for (const e of encodes) {
        if (e.status === 200) {
          const got = JSON.parse(e.text);
          assert.equal(got.bytes, body.length, "forwarded whole");
          assert.equal(got.sum, byteSum(body), "forwarded intact");
        } else if (e.status !== 0) {
          assert.equal(e.status, 503, e.text);
          assert.equal(JSON.parse(e.text).detail.code, "QUEUE_FULL");
          assert.equal(e.retryAfter, "1");
        }
      }
      // The budget serves bodies in the order they began: some always complete.
      assert.ok(encodes.some((e) => e.status === 200), "at least one encode got through");

      // Nothing is left counted, and the router still answers.
      await waitFor(async () => {
        const metrics = await (await fetch(`${r.url}/metrics`)).text();
        return /^svc_router_body_bytes_held 0$/m.test(metrics);
      }, "every body's bytes to be given back");
      assert.equal((await fetch(`${r.url}/healthz`)).status, 200);
    } finally {
      await w.stop();
      await r.proc.stop();
    }
  },
});
