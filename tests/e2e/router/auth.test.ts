/**
 * End to end: worker tokens and client API keys with real processes. A worker with a wrong token
 * is refused by the router, a worker without one refuses to start, and no token or key ever
 * appears in either process's output.
 */
import assert from "node:assert/strict";
import { FLEET_PATH } from "@svc/shared/fleet/protocol";
import {
  E2E_TOKEN,
  encode,
  json,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
  workerIds,
} from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";

const KEY = "client-api-key-e2e-0001";
const WRONG = "not-the-worker-token-at-all-42";

Deno.test({
  name: "e2e: worker tokens and API keys",
  fn: async (t) => {
    const procs: Proc[] = [];
    try {
      const r = await startRouterProc("router-auth", {
        SVC_API_KEYS: `${KEY},second-key-e2e-0002`,
      });
      procs.push(r.proc);
      const good = await startWorkerProc("good", r.url, { SVC_MACHINE_PROFILE: "cpu" });
      procs.push(good);
      const intruder = await startWorkerProc("intruder", r.url, {
        SVC_MACHINE_PROFILE: "cpu",
        SVC_WORKER_TOKEN: WRONG,
      });
      procs.push(intruder);
      await waitFor(
        async () => (await workerIds(r.url, KEY)).includes("good"),
        "good worker",
        60_000,
      );

      await t.step("a worker with a wrong token is refused", async () => {
        await intruder.waitForLine(/401/, 30_000);
        await r.proc.waitForLine(/worker connection refused/, 5000);
        assert.deepEqual(await workerIds(r.url, KEY), ["good"]);
      });

      await t.step("a worker without a token does not start (the variable is named)", async () => {
        const bare = await startWorkerProc("bare", r.url, { SVC_WORKER_TOKEN: "" });
        procs.push(bare);
        const st = await bare.status;
        assert.notEqual(st.code, 0);
        await bare.waitForLine(/SVC_WORKER_TOKEN/, 1000);
        // And a raw dial without credentials gets 401 from the router.
        const res = await fetch(r.url + FLEET_PATH, {
          headers: {
            upgrade: "websocket",
            connection: "upgrade",
            "sec-websocket-version": "13",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          },
        });
        assert.equal(res.status, 401);
        await res.body?.cancel();
      });

      await t.step("API keys: 401 without or with a wrong key; probes stay open", async () => {
        const none = await json(`${r.url}/v1/encode/fixture%2Fdense`, {
          method: "POST",
          headers: { "X-SVC-MACHINE-PROFILE": "cpu", "content-type": "application/json" },
          body: "{}",
        });
        assert.equal(none.status, 401);
        assert.equal((none.body.detail as { code: string }).code, "UNAUTHORIZED");
        const wrong = await encode(r.url, "fixture/dense", {
          "X-SVC-MACHINE-PROFILE": "cpu",
          authorization: "Bearer wrong-key-e2e-9999",
        });
        assert.equal(wrong.status, 401);
        await wrong.body?.cancel();
        const ok = await encode(r.url, "fixture/dense", {
          "X-SVC-MACHINE-PROFILE": "cpu",
          authorization: `Bearer ${KEY}`,
        });
        assert.equal(ok.status, 200);
        await ok.body?.cancel();
        const models = await json(`${r.url}/v1/models`, {
          headers: { authorization: `Bearer ${KEY}` },
        });
        assert.equal(models.status, 200);
        for (const p of ["/healthz", "/readyz"]) {
          const res = await fetch(`${r.url}${p}`);
          assert.equal(res.status, 200, p);
          await res.body?.cancel();
        }
      });

      await t.step("no secret appears in any output", async () => {
        await stopAll(procs);
        const all = procs.flatMap((p) => p.lines).join("\n");
        for (const secret of [E2E_TOKEN, WRONG, KEY, "second-key-e2e-0002", "wrong-key-e2e-9999"]) {
          assert.ok(!all.includes(secret), `a secret leaked into the logs`);
        }
      });
    } finally {
      await stopAll(procs);
    }
  },
});
