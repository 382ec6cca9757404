/**
 * End to end: `deno task start` (infra/start_embedded.ts) gives a working service on one port:
 * the router plus one local worker, and requests without a machine-profile header work.
 */
import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { encode, json, Proc, workerIds } from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";

Deno.test({
  name: "e2e: deno task start serves on one port without a profile header",
  fn: async () => {
    const fixtures = await ensureFixtures();
    const cache = await Deno.makeTempDir({ prefix: "e2e-embedded-" });
    const proc = new Proc("embedded", ["run", "-P=worker", "infra/start_embedded.ts"], {
      SVC_HOST: "127.0.0.1",
      SVC_PORT: "0",
      SVC_MODELS_DIR: `${fixtures}/models`,
      SVC_CLUSTER_CACHE: `${fixtures}/cache`,
      SVC_CACHE_DIR: cache,
    });
    try {
      const m = await proc.waitForLine(/^start: API:\s+http:\/\/127\.0\.0\.1:(\d+)\//, 60_000);
      const url = `http://127.0.0.1:${m[1]}`;
      await waitFor(async () => (await workerIds(url)).length === 1, "the embedded worker", 60_000);
      const res = await encode(url, "fixture/dense", {});
      assert.equal(res.status, 200, await res.clone().text());
      const body = await res.json();
      assert.equal(body.items[0].dense.dims, 32);
      const h = await json(`${url}/health`);
      assert.equal(h.body.status, "healthy");
      const st = await proc.stop(30_000);
      assert.equal(st.code, 0, proc.tail());
    } finally {
      await proc.kill().catch(() => {});
      await Deno.remove(cache, { recursive: true }).catch(() => {});
    }
  },
});
