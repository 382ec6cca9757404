/** Hard limits on request bodies, each one a setting (read by shared/config/common.ts). */

import { invalidInput, type ServiceError } from "../errors.ts";

/**
 * Limits applied to every request body before schema validation.
 *
 * Defaults and why:
 * - `maxBodyBytes` 32 MiB (`SVC_MAX_BODY_BYTES`): 1024 items of long text plus a few images in
 *   msgpack fit; it bounds every allocation the decoder makes.
 * - `maxDepth` 32 (`SVC_MAX_NESTING_DEPTH`): our schemas need 5 levels (body → items → item →
 *   images → image); the rest leaves room for `options` and `output_schema` while keeping the
 *   recursive msgpack/JSON parsers far from the stack limit.
 * - `maxItems` 1024 (`SVC_MAX_ITEMS`): the most elements of any list in a request (`items`, the
 *   embeddings `input`, `labels`...). Lists made only of numbers (token ids) are bounded by the
 *   body size instead.
 * - `maxStringLength` 100 000 (`SVC_MAX_STRING_LENGTH`): UTF-16 code units per string (text, ids,
 *   keys); about 12× the longest sequence (8192 tokens) a catalog model reads, so truncation still
 *   has real text to work on. Image bytes sent as base64 in JSON are exempt (bounded by the body).
 * - `maxObjectKeys` 256 (`SVC_MAX_OBJECT_KEYS`): keys of one object (map). Our objects have a
 *   handful of fields (`options`, an `output_schema`'s 32 properties); an object with 500 000 keys
 *   (8 MB of JSON) took JSON.parse and validation about 7 s of the main thread, so this is checked
 *   by the pre-scans, before any object is built.
 * - `maxValues` 1 048 576 (`SVC_MAX_VALUES`): values of any kind (keys included) in one body.
 *   Generous for real requests (1024 items of 512 token ids fit; OpenAI caps a request at 300k
 *   tokens), yet it bounds the memory and time a decoded body can take whatever its shape: a
 *   32 MiB body of `{}` or nil would otherwise become tens of millions of JS values before any list
 *   limit could be checked. Decoding the worst body within both bounds measured about 1 s.
 */
export interface InputLimits {
  readonly maxBodyBytes: number;
  readonly maxDepth: number;
  readonly maxItems: number;
  readonly maxStringLength: number;
  readonly maxObjectKeys: number;
  readonly maxValues: number;
}

/** The default limits (see {@link InputLimits}). */
export const DEFAULT_LIMITS: InputLimits = Object.freeze({
  maxBodyBytes: 32 * 1024 * 1024,
  maxDepth: 32,
  maxItems: 1024,
  maxStringLength: 100_000,
  maxObjectKeys: 256,
  maxValues: 1_048_576,
});

/** Environment variable of each limit, also quoted in error messages so users know what to raise. */
export const LIMIT_ENV: Readonly<Record<keyof InputLimits, string>> = {
  maxBodyBytes: "SVC_MAX_BODY_BYTES",
  maxDepth: "SVC_MAX_NESTING_DEPTH",
  maxItems: "SVC_MAX_ITEMS",
  maxStringLength: "SVC_MAX_STRING_LENGTH",
  maxObjectKeys: "SVC_MAX_OBJECT_KEYS",
  maxValues: "SVC_MAX_VALUES",
};

/**
 * Upper bounds of each setting. Depth is capped because msgpackr and JSON.parse recurse per level;
 * the body cap stays under what a single ArrayBuffer and bin32 can hold comfortably.
 */
export const LIMIT_MAX: Readonly<Record<keyof InputLimits, number>> = {
  maxBodyBytes: 1024 * 1024 * 1024,
  maxDepth: 1000,
  maxItems: 1_000_000,
  maxStringLength: 256 * 1024 * 1024,
  maxObjectKeys: 1_000_000,
  maxValues: 100_000_000,
};

/** INVALID_INPUT for a body nested deeper than the limit. */
export function tooDeep(maxDepth: number): ServiceError {
  return invalidInput(
    `request nesting exceeds the limit of ${maxDepth} levels (SVC_MAX_NESTING_DEPTH)`,
  );
}

/** INVALID_INPUT for a body with more values than the budget. */
export function tooManyValues(maxValues: number): ServiceError {
  return invalidInput(
    `request holds more than ${maxValues} values (SVC_MAX_VALUES)`,
  );
}

/** INVALID_INPUT for an object (map) with more keys than the limit. */
export function tooManyKeys(maxObjectKeys: number): ServiceError {
  return invalidInput(
    `an object of the request has more than ${maxObjectKeys} keys (SVC_MAX_OBJECT_KEYS)`,
  );
}
