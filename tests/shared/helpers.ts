/** Test helpers for tests/shared. */
import assert from "node:assert/strict";
import { ServiceError } from "@svc/shared/errors";

/** Assert that `fn` throws a ServiceError INVALID_INPUT (and nothing else) whose message matches. */
export function assertInvalid(fn: () => unknown, message?: RegExp): ServiceError {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ServiceError)) {
      assert.fail(`expected ServiceError INVALID_INPUT, got ${String(err)}`);
    }
    assert.equal(err.code, "INVALID_INPUT", err.message);
    assert.equal(err.status, 400);
    if (message) assert.match(err.message, message);
    return err;
  }
  assert.fail("expected INVALID_INPUT, nothing was thrown");
}

/** Bytes from hex (spaces allowed). */
export function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(hex.replaceAll(" ", "").match(/../g) ?? [], (h) => parseInt(h, 16));
}

/** Concatenate byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Deterministic pseudo-random numbers in [0, 1) (xorshift32), so failures reproduce. */
export function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}
