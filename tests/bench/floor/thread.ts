/**
 * The floor server's inference thread: one raw session, the same fixed input every time, the
 * first vector back (transferred). Nothing else: no batching, tokenising or checks.
 */
import { buildFeeds, openRawModel, type RawModel } from "../raw_ort.ts";

/** Messages from the floor server. */
export type FloorThreadMessage =
  | { type: "load"; modelPath: string; threads: number; ids: number[] }
  | { type: "run"; id: number };

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<FloorThreadMessage>) => void) | null;
  postMessage(msg: unknown, transfer?: Transferable[]): void;
};

let model: RawModel | undefined;
let ids: number[] = [];

scope.onmessage = async (e) => {
  const msg = e.data;
  if (msg.type === "load") {
    model = await openRawModel(msg.modelPath, msg.threads);
    ids = msg.ids;
    scope.postMessage({ type: "loaded" });
    return;
  }
  const t0 = performance.now();
  try {
    const out = await model!.session.run(buildFeeds(model!, [ids]));
    const first = out[model!.session.outputNames[0]].data as Float32Array;
    const width = first.length / ids.length;
    // Token 0's row: a vector of the model's width, as a pooled answer would be.
    const vector = first.slice(0, Math.min(first.length, width));
    scope.postMessage({ type: "done", id: msg.id, vector, ms: performance.now() - t0 }, [
      vector.buffer,
    ]);
  } catch (err) {
    scope.postMessage({ type: "failed", id: msg.id, message: String(err) });
  }
};
