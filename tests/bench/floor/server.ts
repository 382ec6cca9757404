/**
 * The bench's floor: the least a server of this shape can do per request on this machine, to
 * read the worker's and router's overheads against. Two modes, chosen by the JSON argument:
 *
 * - `model`: node:http, the msgpack body decoded, one hop to an inference thread that runs the
 *   raw session on fixed token ids, the vector encoded back. What the worker adds to a raw run
 *   that no implementation of "HTTP in front of an inference thread" avoids.
 * - `proxy`: node:http forwarding to the worker with a keep-alive agent, the worker's timing
 *   headers passed on. What any proxy hop adds, to read the router's cost against.
 *
 * Not a server to use: no limits, no validation, no errors beyond a 500.
 */
import http from "node:http";
import { unpack } from "msgpackr";
import { encodeResponse } from "@svc/shared/codec/encode";
import type { FloorThreadMessage } from "./thread.ts";

/** How the floor server is started (one JSON argument). */
export type FloorConfig =
  | { mode: "model"; port: number; modelPath: string; threads: number; ids: number[] }
  | { mode: "proxy"; port: number; upstream: string };

/** Headers of the worker's answer that the proxy passes on (the bench reads its timings). */
const PASSED = ["content-type", "x-total-time", "x-inference-time", "x-queue-time"];

function readAll(req: http.IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => chunks.push(c));
    req.on("end", () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function send(
  res: http.ServerResponse,
  status: number,
  headers: http.OutgoingHttpHeaders,
  body: Uint8Array,
) {
  res.writeHead(status, { ...headers, "content-length": body.length });
  res.end(body);
}

/** The model mode's request handler: decode, one thread hop, encode. */
async function modelHandler(cfg: Extract<FloorConfig, { mode: "model" }>) {
  const thread = new Worker(new URL("./thread.ts", import.meta.url).href, { type: "module" });
  type Done = { vector: Float32Array; ms: number };
  const pending = new Map<number, { resolve(d: Done): void; reject(e: Error): void }>();
  await new Promise<void>((resolve) => {
    thread.onmessage = () => resolve();
    const load: FloorThreadMessage = { type: "load", ...cfg };
    thread.postMessage(load);
  });
  thread.onmessage = (e) => {
    const waiting = pending.get(e.data.id);
    pending.delete(e.data.id);
    if (e.data.type === "done") waiting?.resolve(e.data);
    else waiting?.reject(new Error(e.data.message));
  };
  let next = 1;
  return async (body: Uint8Array, _path: string, res: http.ServerResponse) => {
    const started = performance.now();
    unpack(body); // paid, as the worker pays it; the fixed ids stand for the text
    const id = next++;
    const r = await new Promise<Done>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      const run: FloorThreadMessage = { type: "run", id };
      thread.postMessage(run);
    });
    // The worker's own encoder: the answer's bytes cost what the worker's cost.
    const { body: out, contentType } = encodeResponse(
      { items: [{ dense: r.vector }] },
      "application/msgpack",
    );
    send(res, 200, {
      "content-type": contentType,
      "x-inference-time": r.ms.toFixed(2),
      "x-total-time": (performance.now() - started).toFixed(2),
    }, out as Uint8Array); // msgpack is always bytes
  };
}

/** The proxy mode's request handler: forward the body, pass the answer and its timings back. */
function proxyHandler(cfg: Extract<FloorConfig, { mode: "proxy" }>) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const up = new URL(cfg.upstream);
  return (body: Uint8Array, path: string, res: http.ServerResponse) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request({
        host: up.hostname,
        port: up.port,
        path,
        method: "POST",
        agent,
        headers: {
          "content-type": "application/msgpack",
          accept: "application/msgpack",
          "content-length": body.length,
        },
      }, (answer) => {
        readAll(answer).then((bytes) => {
          const headers: http.OutgoingHttpHeaders = {};
          for (const k of PASSED) {
            if (answer.headers[k] !== undefined) headers[k] = answer.headers[k];
          }
          send(res, answer.statusCode ?? 502, headers, bytes);
          resolve();
        }, reject);
      });
      req.on("error", reject);
      req.end(body);
    });
}

if (import.meta.main) {
  const cfg = JSON.parse(Deno.args[0]) as FloorConfig;
  const handle = cfg.mode === "model" ? await modelHandler(cfg) : proxyHandler(cfg);
  const server = http.createServer((req, res) => {
    if (req.method !== "POST") return send(res, 200, {}, new TextEncoder().encode("ok"));
    readAll(req)
      .then((body) => handle(body, req.url ?? "/", res))
      .catch(() => res.headersSent ? res.destroy() : send(res, 500, {}, new Uint8Array()));
  });
  server.listen(cfg.port, "127.0.0.1");
}
