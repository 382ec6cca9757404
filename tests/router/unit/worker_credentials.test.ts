/**
 * Issue 26.3 and 26.4: a worker token admits one worker. What the router sends a worker opens
 * that worker only (a key derived from the fleet's worker secret and the worker's id), the
 * router forwards only the API's own request headers, and a worker id is bound to the secret so
 * that a token holder cannot take a real worker's id, not even right after a router restart.
 */
import assert from "node:assert/strict";
import { CLOSE_CODES } from "@svc/shared/fleet/protocol";
import { WorkerKeys } from "@svc/shared/fleet/worker_keys";
import { workerKeyCheck } from "#worker/server/api_key.ts";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { openRogue, registered, registerFrame, type RogueSocket } from "../helpers/rogue_worker.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const SECRET = "fleet-worker-secret-for-tests-8d21";
const CLIENT_KEY = "client-key-for-tests-4411";

/** An HTTP server that records the headers of what reaches it (a rogue worker's). */
function capturingServer(): { url: string; seen: Headers[]; close: () => Promise<void> } {
  const seen: Headers[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    seen.push(req.headers);
    await req.body?.cancel();
    return Response.json({ forged: true });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, seen, close: () => server.shutdown() };
}

async function workersOf(url: string): Promise<{ id: string; url: string }[]> {
  const h = await getJson(`${url}/health`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
  return h.body.workers;
}

Deno.test("worker credentials: a rogue receives its own key, which the real worker refuses", async () => {
  const r = await startTestRouter({ SVC_WORKER_API_KEY: SECRET });
  const evil = capturingServer();
  let rogue: RogueSocket | undefined;
  try {
    rogue = await openRogue(r.url);
    // It asks for the real worker's id, without a proof: the router names it itself.
    rogue.send(registerFrame("gpu-1", evil.url, { pool: "rogue", machine_profile: "rogue" }));
    await registered(rogue);
    const reg = rogue.frames.find((f) => f.type === "registered");
    const assigned = reg?.type === "registered" ? reg.worker_id : undefined;
    assert.ok(assigned?.startsWith("unverified-"), `assigned id ${assigned}`);
    const res = await fetch(`${r.url}/v1/encode/fixture%2Fdense`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        "x-svc-machine-profile": "rogue",
        "x-trace-id": "0123456789abcdef0123456789abcdef",
        authorization: `Bearer ${CLIENT_KEY}`,
        cookie: "session=client-secret",
        "x-api-key": "client-api-key",
        "x-forwarded-for": "198.51.100.7",
        "user-agent": "client-agent/1.0",
        "x-custom": "private",
      },
      body: JSON.stringify({ items: [{ text: "secret client text" }] }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(evil.seen.length, 1);
    const got = evil.seen[0];
    // Only the API's request headers, and the rogue's own key.
    for (const name of ["cookie", "x-api-key", "x-forwarded-for", "x-custom"]) {
      assert.equal(got.get(name), null, `${name} is not forwarded`);
    }
    assert.notEqual(got.get("user-agent"), "client-agent/1.0");
    assert.equal(got.get("content-type"), "application/json");
    assert.equal(got.get("accept"), "application/json");
    assert.equal(got.get("x-trace-id"), "0123456789abcdef0123456789abcdef");
    const captured = got.get("authorization") ?? "";
    assert.ok(!captured.includes(SECRET), "the worker secret is never sent");
    assert.ok(!captured.includes(CLIENT_KEY), "the client's key is never sent");
    assert.equal(captured, `Bearer ${await new WorkerKeys(SECRET).requestKey(assigned!)}`);
    // The real worker (the worker's own key check, for its id) refuses the captured key and
    // accepts its own and the secret.
    const realCheck = workerKeyCheck(SECRET, "gpu-1")!;
    assert.equal(await realCheck(captured), false, "the rogue's key opens no other worker");
    assert.equal(
      await realCheck(`Bearer ${await new WorkerKeys(SECRET).requestKey("gpu-1")}`),
      true,
    );
    assert.equal(await realCheck(`Bearer ${SECRET}`), true);
    assert.equal(res.headers.get("x-svc-worker-id"), null, "clients are not told worker ids");
  } finally {
    rogue?.close();
    await evil.close();
    await r.close();
  }
});

Deno.test("worker credentials: a wrong id proof is refused", async () => {
  const r = await startTestRouter({ SVC_WORKER_API_KEY: SECRET });
  try {
    const s = await openRogue(r.url);
    const forged = await new WorkerKeys("another-secret-of-16+").idProof("gpu-1");
    s.send(registerFrame("gpu-1", "http://127.0.0.1:9", { id_proof: forged }));
    assert.equal((await s.closed).code, CLOSE_CODES.badIdProof);
    const err = s.frames.find((f) => f.type === "error");
    assert.equal(err?.type === "error" ? err.code : undefined, "BAD_ID_PROOF");
    assert.deepEqual(await workersOf(r.url), []);
  } finally {
    await r.close();
  }
});

Deno.test("worker credentials: a worker id cannot be squatted across a router restart", async () => {
  const first = await startTestRouter({ SVC_WORKER_API_KEY: SECRET, SVC_API_KEYS: CLIENT_KEY });
  const port = first.port;
  const real = startFakeWorker({
    routerUrl: first.url,
    token: TEST_TOKEN,
    id: "gpu-1",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
    env: { SVC_WORKER_API_KEY: SECRET, SVC_ROUTER_RECONNECT_MAX_MS: "200" },
  });
  const rogues: RogueSocket[] = [];
  let second;
  try {
    await waitFor(() => real.link.connected, "the real worker to register");
    assert.deepEqual((await workersOf(first.url)).map((w) => w.id), ["gpu-1"]);
    await first.close();
    // The new router listens on the same port; a rogue is there before the real worker.
    second = await startTestRouter({
      SVC_PORT: String(port),
      SVC_WORKER_API_KEY: SECRET,
      SVC_API_KEYS: CLIENT_KEY,
    });
    const squatter = await openRogue(second.url);
    rogues.push(squatter);
    squatter.send(registerFrame("gpu-1", `http://127.0.0.1:9`, { instance_key: "k".repeat(40) }));
    await registered(squatter);
    await waitFor(async () => (await workersOf(second!.url)).length === 2, "the real worker back");
    const ids = (await workersOf(second.url)).map((w) => [w.id, w.url]).sort();
    assert.deepEqual(ids[0], ["gpu-1", real.url], "the real worker holds its id");
    assert.match(ids[1][0], /^unverified-[0-9a-f]{12}$/);
    assert.ok(
      !real.logs.some((l) => /ID_IN_USE|refused/.test(`${l.msg} ${JSON.stringify(l.fields)}`)),
    );
  } finally {
    for (const s of rogues) s.close();
    await real.close();
    await first.close();
    await second?.close();
  }
});
