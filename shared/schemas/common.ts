/** Building blocks shared by the resource schemas. */

import { z } from "zod";
import { base64ToBytes } from "../codec/base64.ts";
import { isNdArray, type NdArray } from "../codec/ndarray.ts";

/** The schema type {@link optional} returns: the key is optional and may also be `null`. */
export type Optional<T extends z.ZodType> = z.ZodOptional<
  z.ZodType<z.output<T>, z.input<T> | null>
>;

/**
 * An optional request field. `null` counts as absent because Python clients send `None` for unset
 * fields; any other wrong type is still an error.
 */
export function optional<T extends z.ZodType>(schema: T): Optional<T> {
  const nullAsAbsent = z.preprocess((v) => (v === null ? undefined : v), schema.optional());
  // preprocess() types its input as unknown; the real input is the schema's input or null.
  return (nullAsAbsent as unknown as z.ZodType<z.output<T>, z.input<T> | null>).optional();
}

/** A non-negative integer (dims, counts, offsets, ranks). */
export const Count: z.ZodNumber = z.number().int().nonnegative();

/** A string-keyed object of free-form values (`options`, `config`, `output_schema`...). */
export type FreeObjectValue = Record<string, unknown>;
/** Schema of {@link FreeObjectValue}. */
export const FreeObject: z.ZodType<FreeObjectValue, FreeObjectValue> = z.record(
  z.string(),
  z.unknown(),
);

/**
 * Bytes: msgpack `bin` arrives as Uint8Array; JSON carries base64 text (a `data:` URL prefix is
 * tolerated). Output is always a Uint8Array.
 */
export const Bytes: z.ZodType<Uint8Array, Uint8Array | string> = z
  .union([z.custom<Uint8Array>((v) => v instanceof Uint8Array), z.string()], {
    error: (iss) =>
      iss.input === undefined
        ? "required field is missing"
        : "expected bytes (msgpack bin) or a base64 string",
  })
  .transform((v, ctx): Uint8Array => {
    if (typeof v !== "string") return v;
    const bytes = base64ToBytes(v);
    if (bytes === null) {
      ctx.issues.push({ code: "custom", message: "not valid base64", input: v });
      return z.NEVER;
    }
    return bytes;
  });

/** A schema accepting instances of one typed-array class, with a readable error. */
function typed<T>(ctor: abstract new (...args: never[]) => T, name: string): z.ZodType<T, T> {
  return z.custom<T>((v) => v instanceof ctor, { error: `expected a ${name}` });
}

/** Response vectors are typed arrays in memory; the codec turns them into wire forms. */
export const F32: z.ZodType<Float32Array, Float32Array> = typed(Float32Array, "Float32Array");
/** float16 bits. */
export const F16: z.ZodType<Uint16Array, Uint16Array> = typed(Uint16Array, "Uint16Array (f16)");
/** int8 values. */
export const I8: z.ZodType<Int8Array, Int8Array> = typed(Int8Array, "Int8Array");
/** Packed bits, or plain uint8. */
export const U8: z.ZodType<Uint8Array, Uint8Array> = typed(Uint8Array, "Uint8Array");
/** int32 values (sparse indices). */
export const I32: z.ZodType<Int32Array, Int32Array> = typed(Int32Array, "Int32Array");
/** An NdArray (also one that went through structured clone). */
export const Nd: z.ZodType<NdArray, NdArray> = z.custom<NdArray>(isNdArray, {
  error: "expected an NdArray",
});

/** Token ids: a list of non-negative integers, checked in one pass so errors stay one issue. */
export const TokenIds: z.ZodType<number[], number[]> = z.custom<number[]>(
  (v) => Array.isArray(v) && v.length > 0 && v.every((x) => Number.isSafeInteger(x) && x >= 0),
  { error: "expected a non-empty list of token ids (non-negative integers)" },
);
