/** Bounded request-body reading: the router buffers bodies so it can retry on another worker. */
import { ServiceError } from "../shared/errors.ts";

/** Read the whole body, refusing (400) anything larger than `maxBytes`. */
export async function readBodyLimited(
  req: Request,
  maxBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (!req.body) return new Uint8Array(0);
  // Declared length within the bound: the native whole-body read is the fast path (the reader
  // loop below costs more than the rest of routing). Deno's server enforces content-length.
  if (declared !== null && /^\d+$/.test(declared)) {
    return new Uint8Array(await req.arrayBuffer());
  }
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  // The reader is dropped, not released: releaseLock() is surprisingly costly in Deno.
  const reader = req.body.getReader();
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
