/**
 * A worker's register frame, checked and turned into its directory record: protocol, release,
 * advertised URL, the worker id's claim, and the connection that then holds the id.
 */
import { FLEET_PROTOCOL_VERSION, type RegisterMessage } from "@svc/shared/fleet/protocol";
import { parseVersion, VERSION } from "@svc/shared/version";
import { modelsFromRegistration, type WorkerRecord } from "../directory/types.ts";
import type { FleetConnection, HubServices } from "./connection.ts";
import { checkAdvertisedUrl } from "./advertised_url.ts";
import { identityOf } from "./identity.ts";
import { DEFAULT_STREAM_CAPS, openStreams, streamGrant } from "./streams.ts";
import { RAISE_HINT } from "./cap_log.ts";

/** Register `conn` as the worker `msg` describes, or refuse it (the socket is then closed). */
export async function register(
  conn: FleetConnection,
  msg: RegisterMessage,
  hub: HubServices,
): Promise<void> {
  const o = hub.o;
  if (conn.record) {
    conn.refuse("alreadyRegistered", "already registered");
    return;
  }
  if (msg.protocol !== FLEET_PROTOCOL_VERSION) {
    o.log("warn", "worker speaks another fleet protocol", {
      worker_id: msg.worker_id,
      protocol: msg.protocol,
    });
    conn.refuse(
      "protocolMismatch",
      `router speaks fleet protocol ${FLEET_PROTOCOL_VERSION}, worker ${msg.protocol}`,
    );
    return;
  }
  conn.registering();
  if (!sameMinor(msg.version, VERSION)) {
    o.log("warn", "worker release differs from router release", {
      worker_id: msg.worker_id,
      worker_version: msg.version,
      router_version: VERSION,
    });
  }
  // Requests go over this connection when the worker asks: its advertised URL is then optional.
  const overConnection = msg.transport === "connection" && msg.streams !== undefined;
  let url = "";
  if (msg.url !== undefined) {
    const verdict = await checkAdvertisedUrl(msg.url, o.urlPolicy);
    if (verdict.ok) url = verdict.url;
    else if (!overConnection) {
      o.log("warn", "worker advertises a URL the router will not use, refused", {
        worker_id: msg.worker_id,
        url: msg.url,
        reason: verdict.reason,
      });
      conn.refuse("urlRefused", verdict.reason);
      return;
    } else {
      o.log("info", "worker's advertised URL not used; its requests go over its connection", {
        worker_id: msg.worker_id,
        reason: verdict.reason,
      });
    }
  } else if (!overConnection) {
    conn.refuse(
      "urlRefused",
      "a worker without an advertised URL must take the connection transport",
    );
    return;
  }
  const identity = await identityOf(msg, o.workerKeys);
  if (!identity.ok) {
    o.log("warn", "worker id proof refused", { worker_id: msg.worker_id });
    conn.refuse("badIdProof", identity.reason);
    return;
  }
  if (identity.basis === "assigned") {
    o.log("warn", "worker registers without an id proof; the router assigns its id", {
      worker_id: identity.id,
      claimed_id: msg.worker_id,
      hint: "set the router's SVC_WORKER_API_KEY on the worker too",
    });
  }
  const models = conn.capModels(identity.id, modelsFromRegistration(msg.models));
  if (!hub.budget.fits(conn, models.length)) {
    const cap = hub.budget.caps.maxModels;
    hub.capRefusals.refused("SVC_FLEET_MAX_MODELS", {
      worker_id: identity.id,
      models: models.length,
      announced: hub.budget.announced,
      cap: "SVC_FLEET_MAX_MODELS",
      SVC_FLEET_MAX_MODELS: cap,
    });
    conn.refuse(
      "fleetFull",
      `the fleet announces SVC_FLEET_MAX_MODELS (${cap}) models already: ${RAISE_HINT}`,
    );
    return;
  }
  const now = hub.now();
  const record: WorkerRecord = {
    id: identity.id,
    conn_id: conn.connId,
    router_id: o.routerId,
    url,
    transport: overConnection ? "connection" : "http",
    machine_profile: msg.machine_profile,
    pool: msg.pool,
    bundle: msg.bundle,
    version: msg.version,
    gpu_count: msg.gpus.count,
    gpu_types: msg.gpus.types,
    models,
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: msg.draining,
    instance_hash: msg.instance_key === undefined ? undefined : await sha256Hex(msg.instance_key),
    registered_at: now,
    last_seen: now,
  };
  const caps = o.streams ?? DEFAULT_STREAM_CAPS;
  if (overConnection) {
    // Open before the record is visible: a request routed to it finds its streams.
    conn.streams = openStreams(conn.socket, msg.streams!, caps, (reason) => {
      o.log("warn", "worker broke the request-stream protocol, closing", {
        worker_id: record.id,
        error: reason,
      });
      conn.refuse("invalidFrame", `request stream: ${reason}`);
    });
  }
  // The id belongs to its live connection: only the same process (same instance key) may
  // take it over, e.g. after a reconnect before the old socket was noticed dead.
  if (!(await o.directory.claim(record))) {
    o.log("warn", "worker id in use by a live connection, refused", {
      worker_id: record.id,
      proof: msg.instance_key === undefined ? "none" : "different instance",
    });
    conn.refuse(
      "idInUse",
      `worker id ${record.id} is held by a live connection of another process`,
    );
    return;
  }
  conn.record = record; // from here on, dropping the connection removes the record
  if (!conn.refused) conn.announce(models.length);
  if (conn.refused) return; // closed meanwhile (the fleet's caps)
  const previous = hub.byWorker.get(record.id);
  if (previous && previous !== conn) {
    previous.refuse("replaced", "a newer connection of this worker registered");
  }
  hub.byWorker.set(record.id, conn);
  o.metrics.connections.inc({ result: "registered" });
  o.log("info", "worker registered", {
    worker_id: record.id,
    url: record.url,
    transport: record.transport,
    machine_profile: record.machine_profile,
    pool: record.pool,
    bundle: record.bundle,
    version: record.version,
    models: record.models.length,
    draining: record.draining,
  });
  conn.send({
    type: "registered",
    protocol: FLEET_PROTOCOL_VERSION,
    router_version: VERSION,
    router_id: o.routerId,
    heartbeat_interval_ms: o.heartbeatIntervalMs,
    status_interval_ms: o.statusIntervalMs,
    stale_after_ms: o.workerStaleMs,
    worker_id: record.id,
    ...(overConnection ? { streams: streamGrant(caps) } : {}),
  });
}

/** SHA-256 of `text`, hex (instance keys are stored only hashed). */
async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** True when two releases share major.minor (anything unparsable counts as different). */
function sameMinor(a: string, b: string): boolean {
  try {
    const [am, an] = parseVersion(a);
    const [bm, bn] = parseVersion(b);
    return am === bm && an === bn;
  } catch {
    return false;
  }
}
