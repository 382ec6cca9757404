/** Starting the floor servers (tests/bench/floor/server.ts) as processes of the bench. */
import { freePort, spawnDeno } from "../procs.ts";
import { type Service, serviceWhenOk } from "../services.ts";
import type { FloorConfig } from "./server.ts";

/** The two floors: a bare model server and a bare proxy in front of the worker. */
export interface Floors {
  model: Service;
  proxy: Service;
  stop(): Promise<void>;
}

type WithoutPort<T> = T extends unknown ? Omit<T, "port"> : never;

/** Start one floor server; resolves once it answers. */
export async function startFloor(cfg: WithoutPort<FloorConfig>): Promise<Service> {
  const port = freePort();
  // The worker's permissions: network, reading the model, onnxruntime's native library.
  const proc = spawnDeno([
    "-P=worker",
    "tests/bench/floor/server.ts",
    JSON.stringify({
      ...cfg,
      port,
    }),
  ], {});
  // Any GET answers 200 once the server listens (and, for the model floor, has its session).
  return await serviceWhenOk(proc, `http://127.0.0.1:${port}`, "/healthz", 60_000);
}

/** Start both floors: the model one on `ids` at `threads`, the proxy one in front of `workerUrl`. */
export async function startFloors(
  modelPath: string,
  threads: number,
  ids: number[],
  workerUrl: string,
): Promise<Floors> {
  const model = await startFloor({ mode: "model", modelPath, threads, ids });
  const proxy = await startFloor({ mode: "proxy", upstream: workerUrl }).catch(async (err) => {
    await model.proc.kill();
    throw err;
  });
  return {
    model,
    proxy,
    stop: async () => {
      await Promise.all([model.proc.kill(), proxy.proc.kill()]);
    },
  };
}
