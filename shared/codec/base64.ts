/** Base64 for JSON bodies: image bytes in requests and `encoding_format: "base64"` embeddings. */

/** Strict standard base64 (padding optional); anything else is rejected rather than guessed. */
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/** Optional `data:<type>;base64,` prefix some clients put in front of image bytes. */
const DATA_URL_RE = /^data:[\w.+-]+\/[\w.+-]+;base64,/;

/** Decode base64 (standard alphabet, optional data-URL prefix); returns null when malformed. */
export function base64ToBytes(text: string): Uint8Array | null {
  const s = DATA_URL_RE.test(text) ? text.slice(text.indexOf(",") + 1) : text;
  if (s.length % 4 === 1 || !BASE64_RE.test(s)) return null;
  try {
    return Uint8Array.fromBase64(s);
  } catch {
    return null; // e.g. non-zero padding bits or misplaced '='
  }
}

/** Little-endian float32 bytes as base64: what the `openai` client expects for `encoding_format: base64`. */
export function float32ToBase64(values: Float32Array): string {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength).toBase64();
}
