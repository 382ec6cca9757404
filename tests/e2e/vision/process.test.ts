/**
 * Image requests through real processes: a worker started with the `worker` permission set
 * (`deno run -P=worker`: sharp's native module needs its ffi entry there) behind a router
 * process. A good image is embedded, a bad one is a 400, and both pass through the router.
 */
import assert from "node:assert/strict";
import {
  fleetEnv,
  type Service,
  startRouterProcess,
  startWorkerProcess,
} from "../../observability/helpers/process.ts";
import { waitFor } from "../../helpers/wait.ts";
import { base64, picture } from "../../vision/helpers.ts";

async function post(
  url: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      "x-svc-machine-profile": "cpu",
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("vision processes: images through the router to a worker run with -P=worker", async () => {
  const router = await startRouterProcess();
  let worker: Service | undefined;
  try {
    worker = await startWorkerProcess(fleetEnv(router.url, "vision-w1"));
    await waitFor(async () => {
      const h = await (await fetch(`${router.url}/health`)).json();
      return h.worker_count === 1;
    }, "worker registered");
    const jpeg = base64(await picture(160, 120, "jpeg"));
    for (const base of [worker.url, router.url]) {
      const ok = await post(`${base}/v1/encode/fixture/clip`, {
        items: [{ id: "a", images: [{ data: jpeg, format: "jpeg" }] }],
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const items = ok.body.items as { id: string; dense: { dims: number } }[];
      assert.deepEqual([items[0].id, items[0].dense.dims], ["a", 32]);
      const bad = await post(`${base}/v1/encode/fixture/clip`, {
        items: [{ images: [{ data: jpeg, format: "png" }] }],
      });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.match(
        (bad.body.detail as { message: string }).message,
        /items\[0\]\.images\[0\] has format 'png' but its bytes are a jpeg image/,
      );
    }
  } finally {
    await worker?.proc.stop();
    await router.proc.stop();
  }
});
