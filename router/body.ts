/** Bounded request-body reading: the router buffers bodies so it can retry on another worker. */
import { ServiceError } from "../shared/errors.ts";

/** Read the whole body, refusing (400) anything larger than `maxBytes`. */
export async function readBodyLimited(req: Request, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (!req.body) return new Uint8Array(0);
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  const reader = req.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

function tooLarge(maxBytes: number): ServiceError {
  return new ServiceError("INVALID_INPUT", `request body larger than ${maxBytes} bytes`);
}
