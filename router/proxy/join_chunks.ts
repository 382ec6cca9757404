/** Bodies that arrive in parts (a socket's reads, a stream's frames, KV values) made whole. */

/** `parts` joined into one buffer of `size` bytes (a single part as it is). */
export function joinChunks(parts: readonly Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
