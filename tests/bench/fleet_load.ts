/**
 * The load process of `deno task bench:fleet` (tests/bench/fleet.ts): many simulated workers in
 * one process, each a real fleet socket (the worker token on the upgrade, an id proof, the
 * protocol's frames from shared/fleet/protocol.ts), sending what a worker sends: a status frame a
 * second (built by the worker's own status-delta logic) and a ping every 500 ms. One timer drives
 * every socket, so a thousand of them cost the load process little.
 *
 *   deno run -P=tests tests/bench/fleet_load.ts --url=ws://... --workers=N --first=K
 *     [--models=30] [--busy=0.1] [--deltas=off]   (token and worker secret in FLEET_BENCH_TOKEN/_SECRET)
 *
 * Prints `registered N` once every socket is registered, then runs until stdin closes.
 */
import {
  encodeMessage,
  type FleetModelStatus,
  type RegisterMessage,
  type StatusMessage,
} from "@svc/shared/fleet/protocol";
import { StatusDeltas } from "@svc/shared/fleet/status_delta";
import { WorkerKeys } from "@svc/shared/fleet/worker_keys";
import { VERSION } from "@svc/shared/version";
import { BATCH_SIZE_BUCKETS } from "@svc/shared/status/request_series";

/** `--name=value` arguments. */
function arg(name: string, fallback: string): string {
  const found = Deno.args.find((a) => a.startsWith(`--${name}=`));
  return found ? found.slice(name.length + 3) : fallback;
}

const url = arg("url", "");
const count = Number(arg("workers", "100"));
const first = Number(arg("first", "0"));
const modelsEach = Number(arg("models", "30"));
/** Share of status frames in which one model's queue and counters move (the rest repeat). */
const busy = Number(arg("busy", "0.1"));
/** `--deltas=off`: every status frame lists every model (workers of earlier releases). */
const deltas = arg("deltas", "on") !== "off";
const token = Deno.env.get("FLEET_BENCH_TOKEN") ?? "";
const secret = Deno.env.get("FLEET_BENCH_SECRET");
const keys = secret ? new WorkerKeys(secret) : undefined;

const TICK_MS = 20;

/** One simulated worker. */
interface Sim {
  id: string;
  ws: WebSocket;
  registered: boolean;
  /** Next status and ping, ms on the performance clock. */
  nextStatus: number;
  nextPing: number;
  statusMs: number;
  pingMs: number;
  seq: number;
  models: FleetModelStatus[];
  deltas: StatusDeltas;
}

/** A worker's models: a few loaded (with revision, memory, counters), the rest available. */
function modelsOf(i: number): FleetModelStatus[] {
  return Array.from({ length: modelsEach }, (_, k) => {
    const loaded = k < 3;
    return {
      name: `bench-org/model-${String(k).padStart(2, "0")}-${loaded ? "loaded" : "idle"}`,
      state: loaded ? "loaded" : "available",
      queue_depth: 0,
      ...(loaded
        ? {
          device: "cpu",
          memory_bytes: 90_000_000 + k * 1000 + i,
          tokens_total: 1_000_000 + k,
          batch_sizes: {
            counts: BATCH_SIZE_BUCKETS.map((_, b) => 100 * (b + 1)),
            sum: 5000,
            count: 1000,
          },
          revision: "0123456789abcdef0123456789abcdef",
        }
        : {}),
    };
  });
}

const sims: Sim[] = [];
let registered = 0;
let ready = false;

for (let n = 0; n < count; n++) {
  const i = first + n;
  const id = `bench-worker-${String(i).padStart(5, "0")}`;
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  const sim: Sim = {
    id,
    ws,
    registered: false,
    nextStatus: 0,
    nextPing: 0,
    statusMs: 1000,
    pingMs: 500,
    seq: 0,
    models: modelsOf(i),
    deltas: new StatusDeltas(),
  };
  sims.push(sim);
  ws.onopen = async () => {
    const models = sim.models.map((m) => ({
      name: m.name,
      bundle: "default",
      state: m.state,
      ...(m.revision ? { revision: m.revision } : {}),
    }));
    const register: RegisterMessage = {
      type: "register",
      protocol: 1,
      worker_id: id,
      url: `http://127.0.0.1:${20000 + (i % 40000)}`,
      machine_profile: "cpu",
      pool: "cpu",
      bundle: "default",
      version: VERSION,
      gpus: { count: 0, types: [] },
      models,
      draining: false,
      instance_key: crypto.randomUUID().replaceAll("-", "") + "00000000",
      ...(keys ? { id_proof: await keys.idProof(id) } : {}),
    };
    ws.send(encodeMessage(register));
  };
  ws.onmessage = (ev) => {
    const text = String(ev.data);
    if (!sim.registered && text.includes('"registered"')) {
      const msg = JSON.parse(text);
      sim.registered = true;
      sim.statusMs = msg.status_interval_ms;
      sim.pingMs = msg.heartbeat_interval_ms;
      const now = performance.now();
      // Spread over the beat, as independent machines would be.
      sim.nextStatus = now + Math.random() * sim.statusMs;
      sim.nextPing = now + Math.random() * sim.pingMs;
      sendStatus(sim);
      registered++;
    } else if (text.includes('"error"')) {
      console.error(`${id}: ${text}`);
    }
  };
  ws.onclose = (ev) => {
    if (sim.registered) registered--;
    sim.registered = false;
    if (ready) console.error(`${id}: closed ${ev.code} ${ev.reason}`);
  };
  ws.onerror = () => {};
  // Dial in small groups: a thousand upgrades at once would only measure the burst.
  if (n % 50 === 49) await new Promise((r) => setTimeout(r, 50));
}

/** Send one status frame: a loaded model moves in `busy` of them. */
function sendStatus(sim: Sim): void {
  if (Math.random() < busy) {
    const m = sim.models[Math.floor(Math.random() * Math.min(3, sim.models.length))];
    m.queue_depth = m.queue_depth > 0 ? 0 : 1;
    if (m.tokens_total !== undefined) m.tokens_total += 128;
  }
  const full: StatusMessage = {
    type: "status",
    seq: sim.seq++,
    models: sim.models,
    queue_depth: sim.models.reduce((n, m) => n + m.queue_depth, 0),
    in_flight: 0,
    memory_used_bytes: 1_000_000_000,
    memory_total_bytes: 8_000_000_000,
    draining: false,
  };
  sim.ws.send(encodeMessage(deltas ? sim.deltas.next(full) : full));
}

setInterval(() => {
  const now = performance.now();
  for (const sim of sims) {
    if (!sim.registered || sim.ws.readyState !== WebSocket.OPEN) continue;
    if (now >= sim.nextPing) {
      sim.nextPing += sim.pingMs;
      sim.ws.send(encodeMessage({ type: "ping", t: Date.now() }));
    }
    if (now >= sim.nextStatus) {
      sim.nextStatus += sim.statusMs;
      sendStatus(sim);
    }
  }
}, TICK_MS);

// Report readiness, then run until the driver closes stdin.
while (registered < count) await new Promise((r) => setTimeout(r, 100));
ready = true;
console.log(`registered ${registered}`);
for await (const _ of Deno.stdin.readable) {
  // Nothing is read; the loop ends when the driver closes stdin.
}
Deno.exit(0);
