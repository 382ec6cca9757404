/**
 * Issue 26.1: what many token holders can do together. The fleet's aggregate caps (connections,
 * announced models, frame bytes per second) close the biggest talkers first and refuse new
 * registrations, so a real worker keeps its place; fleet views stay bounded in size; status
 * subscribers share one frame, slow readers skip ticks, and their number is capped.
 */
import assert from "node:assert/strict";
import { CLOSE_CODES } from "@svc/shared/fleet/protocol";
import { Broadcaster, StreamSlots } from "@svc/shared/dashboard/broadcaster";
import { FleetBudget, type Talker } from "#router/fleet/budget.ts";
import { boundStatus, boundView } from "#router/views/bounds.ts";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";
import { FakeTime } from "../../helpers/fake_time.ts";
import {
  openRogue,
  registered,
  registerFrame,
  type RogueSocket,
  statusFrame,
} from "../helpers/rogue_worker.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const talker = (): Talker => ({ windowBytes: 0, announced: 0 });

Deno.test("fleet caps: the byte budget names the biggest talkers first, per second", () => {
  let now = 0;
  const b = new FleetBudget({ maxConnections: 3, maxModels: 100, maxBytesPerS: 1000 }, () => now);
  const [real, noisy, louder] = [talker(), talker(), talker()];
  for (const t of [real, noisy, louder]) b.join(t);
  assert.ok(b.connectionsFull);
  assert.deepEqual(b.frame(real, 50), []);
  assert.deepEqual(b.frame(noisy, 400), []);
  assert.deepEqual(b.frame(louder, 500), []);
  // Over the cap: the biggest goes, and that is enough.
  assert.deepEqual(b.frame(noisy, 200), [noisy], "noisy sent 600 this second, louder 500");
  b.leave(noisy);
  assert.equal(b.bytesFull, true, "new sockets wait for the next second");
  assert.deepEqual(b.frame(louder, 600), [louder]);
  b.leave(louder);
  assert.deepEqual(b.frame(real, 100), [], "the small talker keeps its place");
  now += 1000;
  assert.equal(b.bytesFull, false);
  assert.deepEqual(b.frame(real, 900), [], "a new second, a new budget");
});

Deno.test("fleet caps: announced models past the cap close the biggest announcer", () => {
  const b = new FleetBudget({ maxConnections: 9, maxModels: 100, maxBytesPerS: 1 << 20 }, () => 0);
  const [real, hoarder] = [talker(), talker()];
  b.join(real);
  b.join(hoarder);
  assert.deepEqual(b.announce(real, 10), []);
  assert.ok(b.fits(hoarder, 90) && !b.fits(hoarder, 91));
  assert.deepEqual(b.announce(hoarder, 90), []);
  assert.deepEqual(b.announce(real, 12), [hoarder], "the hoarder goes, not the real worker");
  b.leave(hoarder);
  assert.equal(b.announced, 12);
});

Deno.test("fleet caps: views list at most the configured workers and model entries", () => {
  const worker = (i: number) => ({
    id: `w${i}`,
    loaded_models: [`m${i}`],
    models: [{ name: `m${i}` }, { name: `n${i}` }],
  });
  const view = {
    worker_count: 10,
    workers: Array.from({ length: 10 }, (_, i) => worker(i)),
    models: Array.from({ length: 50 }, (_, i) => ({ name: `m${i}` })),
    loaded_models: Array.from({ length: 50 }, (_, i) => `m${i}`),
  };
  const b = boundView(view, { maxWorkers: 4, maxModels: 7 });
  assert.equal(b.worker_count, 10, "counts stay whole");
  assert.equal(b.workers.length, 4);
  const perWorker = b.workers.reduce((n, w) => n + w.models.length + w.loaded_models.length, 0);
  assert.equal(perWorker, 7, "all workers' lists share the model budget");
  assert.equal(b.models.length, 7);
  assert.equal(b.loaded_models.length, 7);
  assert.deepEqual(b.truncated, { workers: 6, models: 5 + 43 + 43 });
  assert.equal(boundView(view, { maxWorkers: 100, maxModels: 1000 }).truncated, undefined);
  const status = boundStatus({
    loaded_models: ["a"],
    models: Array.from({ length: 5 }, (_, i) => ({ name: `m${i}`, workers: [{}, {}, {}] })),
  }, { maxWorkers: 2, maxModels: 3 });
  assert.equal(status.models.length, 3);
  assert.deepEqual(status.models.map((m) => m.workers.length), [2, 1, 0]);
  assert.deepEqual(status.truncated, { workers: 1 + 2 + 3, models: 2 });
});

Deno.test("fleet caps: streams share one slot cap, one encoded frame, and skip slow readers", async () => {
  using time = new FakeTime();
  class Sock extends EventTarget {
    readyState: number = WebSocket.OPEN;
    bufferedAmount = 0;
    sentBytes: Uint8Array[] = [];
    send(): void {
      throw new Error("shared sockets are sent bytes");
    }
    sendText(b: Uint8Array): void {
      this.sentBytes.push(b);
    }
    close(): void {
      this.readyState = WebSocket.CLOSED;
      this.dispatchEvent(new Event("close"));
    }
  }
  const slots = new StreamSlots(3);
  const a = new Broadcaster({ intervalMs: 100, build: () => "x".repeat(1000), slots });
  const b = new Broadcaster({ intervalMs: 100, build: () => "y", slots });
  const socks = [new Sock(), new Sock(), new Sock()];
  a.add(socks[0] as unknown as WebSocket);
  a.add(socks[1] as unknown as WebSocket);
  b.add(socks[2] as unknown as WebSocket);
  assert.ok(a.full && b.full, "three subscribers over two streams fill the cap");
  const late = new Sock();
  a.add(late as unknown as WebSocket);
  await time.tick(0);
  assert.equal(late.sentBytes.length, 0, "no frame for a socket past the cap");
  assert.ok(socks[0].sentBytes[0] === socks[1].sentBytes[0], "one encoded frame for all");
  socks[1].bufferedAmount = 100_000; // a reader that stopped: more than 64 KiB pending
  await time.tick(300);
  assert.equal(socks[0].sentBytes.length, 4);
  assert.equal(socks[1].sentBytes.length, 1, "the slow reader skips ticks");
  socks[2].close();
  assert.ok(!a.full, "a closed subscriber frees its slot");
  a.close();
  b.close();
});

/** `n` model names of about 220 characters, distinct per `k`. */
const names = (k: number, n: number) =>
  Array.from({ length: n }, (_, i) => `org/${k}-${i}-${"x".repeat(200)}`);
const models = (k: number, n: number) =>
  names(k, n).map((name) => ({ name, bundle: "default", state: "available" as const }));

Deno.test("fleet caps: connections and announced models past the caps are refused; views stay small", async () => {
  const r = await startTestRouter({
    SVC_FLEET_MAX_CONNECTIONS: "3",
    SVC_FLEET_MAX_MODELS: "1000",
    SVC_FLEET_VIEW_MAX_MODELS: "50",
  });
  const rogues: RogueSocket[] = [];
  try {
    // A hoarder announces 900 models; a second one cannot register past the fleet's 1000.
    const hoarder = await openRogue(r.url);
    rogues.push(hoarder);
    hoarder.send(registerFrame("hoarder", "http://127.0.0.1:9", { models: models(1, 900) }));
    await registered(hoarder);
    const second = await openRogue(r.url);
    rogues.push(second);
    second.send(registerFrame("second", "http://127.0.0.1:9", { models: models(2, 200) }));
    assert.equal((await second.closed).code, CLOSE_CODES.fleetFull);
    const err = second.frames.find((f) => f.type === "error");
    assert.match(err?.type === "error" ? err.message : "", /SVC_FLEET_MAX_MODELS/);
    // Views: with 50 model entries at most, /health stays small however much was announced.
    const h = await getJson(`${r.url}/health`);
    assert.equal(h.body.models.length, 50);
    assert.ok(JSON.stringify(h.body).length < 64 * 1024, "bounded in size");
    assert.ok(h.body.truncated.models > 0);
    // Connections: the hoarder and two more; the fourth is refused before any upgrade.
    rogues.push(await openRogue(r.url), await openRogue(r.url));
    const refused = await fetch(`${r.url}/fleet/v1/connect`, {
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        upgrade: "websocket",
        connection: "upgrade",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
    });
    assert.equal(refused.status, 503);
    assert.match(await refused.text(), /SVC_FLEET_MAX_CONNECTIONS \(3\).*SVC_FLEET_WORKERS/);
    // The operator reads which cap and which setting in the router's log, for both refusals.
    const warned = r.logs.filter((l) => l.level === "warn" && l.msg.includes("at a cap"));
    assert.deepEqual(
      warned.map((l) => [l.fields?.cap, l.fields?.[String(l.fields?.cap)]]),
      [["SVC_FLEET_MAX_MODELS", 1000], ["SVC_FLEET_MAX_CONNECTIONS", 3]],
    );
    assert.ok(warned.every((l) => String(l.fields?.hint).includes("SVC_FLEET_WORKERS")));
  } finally {
    for (const s of rogues) s.close();
    await r.close();
  }
});

Deno.test("fleet caps: past the byte cap the biggest talker is closed; the real worker stays", async () => {
  const r = await startTestRouter({
    SVC_FLEET_MAX_STATUS_BYTES_PER_S: String(256 * 1024),
    SVC_MACHINE_PROFILES: "cpu",
  });
  const real = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "real",
    profile: "cpu",
    models: [{ name: "fixture/dense", state: "loaded" }],
  });
  const noisy = await openRogue(r.url);
  try {
    await waitFor(() => real.link.connected, "the real worker to register");
    noisy.send(registerFrame("noisy", "http://127.0.0.1:9"));
    await registered(noisy);
    // Status frames of about 200 KB each: the second one is over 256 KiB this second.
    for (let i = 0; i < 5 && noisy.ws.readyState === WebSocket.OPEN; i++) {
      noisy.send(statusFrame(i, names(1, 900)));
    }
    assert.equal((await noisy.closed).code, CLOSE_CODES.fleetFull);
    const err = noisy.frames.find((f) => f.type === "error");
    assert.match(err?.type === "error" ? err.message : "", /SVC_FLEET_MAX_STATUS_BYTES_PER_S/);
    await waitFor(() => !r.directory.snapshot().some((w) => w.id === "noisy"), "noisy removed");
    assert.ok(real.link.connected, "the real worker keeps its socket");
    assert.ok(r.directory.snapshot().some((w) => w.id === "real"));
    assert.ok((await r.metrics.connections.value({ result: "fleet_full" })) >= 1);
  } finally {
    noisy.close();
    await real.close();
    await r.close();
  }
});
