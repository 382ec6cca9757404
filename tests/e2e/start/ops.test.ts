/**
 * The ops tasks (`deno task status|models|drain`) against live processes: a real router with API
 * keys and two real workers. Each task runs as deno.json spells it; its output is read as text.
 */
import assert from "node:assert/strict";
import {
  encode,
  json,
  type Proc,
  startRouterProc,
  startWorkerProc,
  stopAll,
  workerIds,
} from "../procs.ts";
import { waitFor } from "../../helpers/wait.ts";
import { runTask } from "./tasks.ts";

const KEY = "ops-test-client-key-0123456789";
const AUTH = { authorization: `Bearer ${KEY}` };

/** Lines of a table whose first column is `first`. */
function rowsOf(text: string, first: string): string[][] {
  return text.split("\n").map((l) => l.split(/\s{2,}/)).filter((c) => c[0] === first);
}

Deno.test({
  name: "ops tasks: --help, status, models and drain against a live router and two workers",
  fn: async () => {
    for (const task of ["status", "models", "drain"]) {
      const r = await runTask(task, ["--help"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^usage: npx deno task ${task} `));
      assert.match(r.stdout, /--url URL/);
    }
    const procs: Proc[] = [];
    try {
      const router = await startRouterProc("ops-router", {
        SVC_API_KEYS: KEY,
        SVC_DEFAULT_MACHINE_PROFILE: "cpu",
        SVC_EXPOSE_WORKER_ID: "1", // the drain below picks the worker that answered
      });
      procs.push(router.proc);
      procs.push(await startWorkerProc("ops-w-a", router.url, { SVC_MACHINE_PROFILE: "cpu" }));
      procs.push(await startWorkerProc("ops-w-b", router.url, { SVC_MACHINE_PROFILE: "cpu" }));
      await waitFor(
        async () => (await workerIds(router.url, KEY)).length === 2,
        "two workers",
        60_000,
      );
      const loaded = await encode(router.url, "fixture/dense", AUTH);
      assert.equal(loaded.status, 200, await loaded.text());
      const url = ["--url", router.url];
      const keyed = [...url, "--api-key", KEY];

      // status: with API keys set, /health is for key holders too.
      const statusRefused = await runTask("status", url);
      assert.equal(statusRefused.code, 1);
      assert.match(statusRefused.stderr.trim(), /401 UNAUTHORIZED .*--api-key/);
      await waitFor(
        async () => {
          const r = await runTask("status", keyed);
          return rowsOf(r.stdout, "fixture/dense").some((c) => c[2] === "loaded");
        },
        "fixture/dense loaded in the status table",
        30_000,
      );
      const st = await runTask("status", keyed);
      assert.equal(st.code, 0, st.stderr);
      assert.match(st.stdout, /healthy {2}2\/2 workers serving/);
      assert.deepEqual(rowsOf(st.stdout, "cpu")[0].slice(0, 4), ["cpu", "default", "2", "2"]);
      for (const id of ["ops-w-a", "ops-w-b"]) {
        const [row] = rowsOf(st.stdout, id);
        assert.deepEqual(row.slice(0, 6), [id, "cpu", "default", "serving", "0", "0"], st.stdout);
      }
      const json0 = await runTask("status", [...keyed, "--json"]);
      assert.equal(JSON.parse(json0.stdout).worker_count, 2);

      // models: behind the API key; the key comes from --api-key or SVC_API_KEYS.
      const refused = await runTask("models", url);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr.trim(), /^GET \/v1\/models: 401 UNAUTHORIZED .*--api-key/);
      const models = await runTask("models", url, {
        SVC_API_KEYS: `${KEY},other-key-abcdefghijkl`,
      });
      assert.equal(models.code, 0, models.stderr);
      const lines = models.stdout.trim().split("\n");
      assert.match(lines[0], /^MODEL\s+FAMILY\s+BUNDLE\s+STATE\s+OUTPUTS$/);
      assert.match(lines[1], /^fixture\/dense\s+dense\s+default\s+loaded\s+dense,score$/);
      assert.match(lines.at(-1)!, /^\d+ models, 1 loaded$/);
      const [gliner] = rowsOf(models.stdout, "fixture/gliner");
      assert.deepEqual([gliner[1], gliner[3]], ["gliner", "available"]);

      // drain: the router stops sending to the worker that has the model loaded, while a large
      // request (sent there by affinity) is running on it; that request still completes.
      const drained = loaded.headers.get("x-svc-worker-id")!;
      const other = drained === "ops-w-a" ? "ops-w-b" : "ops-w-a";
      const long = Array.from({ length: 1024 }, (_, i) => `request ${i} ${"words ".repeat(100)}`);
      const inFlight = encode(router.url, "fixture/dense", AUTH, long);
      const d = await runTask("drain", [...url, "--api-key", KEY, drained]);
      assert.equal(d.code, 0, d.stderr);
      assert.match(
        d.stdout,
        new RegExp(`^worker ${drained} is draining: no new requests go to it`),
      );
      const big = await inFlight;
      assert.equal(big.status, 200, await big.clone().text());
      assert.equal(big.headers.get("x-svc-worker-id"), drained);
      assert.equal((await big.json()).items.length, long.length);
      const after = await runTask("status", keyed);
      assert.equal(rowsOf(after.stdout, drained)[0][3], "draining", after.stdout);
      assert.equal(rowsOf(after.stdout, other)[0][3], "serving");
      const before = router.proc.lines.length;
      // Past the result cache: these are about where requests are routed.
      const noStore = { ...AUTH, "cache-control": "no-store" };
      for (let i = 0; i < 6; i++) {
        const r = await encode(router.url, "fixture/dense", noStore);
        assert.equal(r.status, 200, await r.text());
      }
      const served = router.proc.lines.slice(before).filter((l) => l.includes("/v1/encode/"));
      assert.equal(served.length, 6);
      assert.ok(served.every((l) => l.includes(`worker_id=${other}`)), served.join("\n"));
      // Still draining after its next status frames (a status frame cannot undo it).
      const h = await json(`${router.url}/health`, { headers: AUTH });
      const w = (h.body.workers as { id: string; state: string }[]).find((w) => w.id === drained);
      assert.equal(w?.state, "draining");

      // Mistakes are one line each, with the right exit code.
      const unknown = await runTask("drain", [...url, "--api-key", KEY, "no-such-worker"]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr.trim(), /^POST .*: 404 NOT_FOUND worker "no-such-worker" is not/);
      const noId = await runTask("drain", url);
      assert.equal(noId.code, 2);
      assert.match(noId.stderr, /name exactly one worker id/);
    } finally {
      await stopAll(procs);
    }
    const down = await runTask("status", ["--url", "http://127.0.0.1:9"]);
    assert.equal(down.code, 1);
    assert.match(down.stderr.trim(), /^cannot reach the router at http:\/\/127\.0\.0\.1:9 /);
    assert.equal(down.stderr.trim().split("\n").length, 1);
  },
});
