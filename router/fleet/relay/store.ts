/**
 * A relayed body in Deno KV: written as chunks under a prefix (several commits when it is larger
 * than one may carry), read back whole and checked against the head's count and size, deleted
 * once read. Every key expires (`expireIn`): a side that dies mid-relay leaves nothing for long.
 */
import { commitGroups } from "./codec.ts";
import { joinChunks } from "../../proxy/join_chunks.ts";

/**
 * Store `chunks` under `prefix` (index appended). Groups that fit go in `last` (the commit that
 * also writes the head, so a reader never sees a head before its body); the others are committed
 * first. Resolves false when a commit failed.
 */
export async function writeChunks(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  chunks: readonly Uint8Array[],
  expireIn: number,
  last: Deno.AtomicOperation,
): Promise<boolean> {
  const groups = commitGroups(chunks);
  for (let g = 0; g < groups.length; g++) {
    const op = g === groups.length - 1 ? last : kv.atomic();
    for (const i of groups[g]) op.set([...prefix, i], chunks[i], { expireIn });
    if (op !== last && !(await op.commit()).ok) return false;
  }
  return true;
}

/**
 * The body of `count` chunks and `bytes` bytes under `prefix`, joined; undefined when a chunk is
 * missing, not bytes, or the sizes disagree (expired, or written by something else).
 */
export async function readChunks(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  count: number,
  bytes: number,
): Promise<Uint8Array | undefined> {
  if (count === 0) return bytes === 0 ? new Uint8Array(0) : undefined;
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const e of kv.list<unknown>({ prefix })) {
    const v = e.value;
    if (!(v instanceof Uint8Array) || e.key.at(-1) !== parts.length) return undefined;
    size += v.length;
    if (size > bytes) return undefined;
    parts.push(v);
  }
  if (parts.length !== count || size !== bytes) return undefined;
  return joinChunks(parts, size);
}

/** Attempts of a write that another process's lock refused (a shared file's "database is locked"). */
const WRITE_ATTEMPTS = 5;

/**
 * Run `write` until it resolves true, up to {@link WRITE_ATTEMPTS} times with a short growing
 * pause: processes sharing a KV file refuse each other's commits now and then, briefly.
 * Resolves false when every attempt failed or was refused.
 */
export async function writeWithRetry(write: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < WRITE_ATTEMPTS; i++) {
    try {
      if (await write()) return true;
    } catch {
      // Locked or failed: once more after a pause.
    }
    await new Promise((r) => setTimeout(r, 10 * 2 ** i));
  }
  return false;
}

/** Deletions per commit (KV allows 1000 mutations; these keys are small). */
const DELETE_BATCH = 100;

/**
 * Delete the `count` chunks under `prefix`, and `also` in the first commit (best effort: they
 * expire anyway).
 */
export async function deleteChunks(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  count: number,
  also?: Deno.KvKey,
): Promise<void> {
  for (let i = 0; i === 0 || i < count; i += DELETE_BATCH) {
    const op = kv.atomic();
    if (i === 0 && also) op.delete(also);
    for (let j = i; j < Math.min(count, i + DELETE_BATCH); j++) op.delete([...prefix, j]);
    await op.commit().catch(() => {});
  }
}

/** Most chunk deletions folded into a claim's commit (the rest are deleted after it). */
export const CLAIM_DELETES = DELETE_BATCH;
