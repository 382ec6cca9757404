// Own code: patching a model needs the byte ranges of its initializers to splice new data in,
// which protobuf libraries do not expose; decoding a whole model with one would also copy every
// weight. The wire format is small: varints, length-delimited fields, fixed 32/64-bit values.
/**
 * Protocol-buffers wire reading over a byte range, without copying: each field comes back with
 * where its tag starts, where its value lies and (for varints) its value. Every length is checked
 * against the range, so a truncated or hostile file ends in a {@link ProtoFormatError}, never in
 * an out-of-bounds read.
 */

/** Wire types of the protobuf encoding. */
export const WireType = { VARINT: 0, I64: 1, LEN: 2, I32: 5 } as const;

/** The bytes are not a well-formed protobuf message. */
export class ProtoFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtoFormatError";
  }
}

/** One field of a message, as positions in the underlying bytes. */
export interface ProtoField {
  /** Field number. */
  field: number;
  /** Wire type (see {@link WireType}). */
  wire: number;
  /** Offset of the field's tag: the field occupies `[tagStart, end)`. */
  tagStart: number;
  /** Offset of the value (after the length prefix for length-delimited fields). */
  valueStart: number;
  /** End of the value (exclusive). */
  end: number;
  /** The value of a varint field (as a JS number; int64 beyond 2^53 is refused). */
  varint: number;
}

/** Reads a varint at `pos`; returns its value and the offset after it. */
export function readVarint(bytes: Uint8Array, pos: number, end: number): [number, number] {
  let value = 0;
  let scale = 1;
  // Up to 7 bytes (49 bits) a double holds the value exactly: the common case.
  for (let i = 0; i < 7; i++) {
    if (pos >= end) throw new ProtoFormatError("truncated varint");
    const b = bytes[pos++];
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) return [value, pos];
    scale *= 128;
  }
  let big = BigInt(value);
  for (let shift = 49n; shift < 70n; shift += 7n) {
    if (pos >= end) throw new ProtoFormatError("truncated varint");
    const b = bytes[pos++];
    big |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) {
      // int64 is two's complement on the wire: negative values take ten bytes.
      const signed = BigInt.asIntN(64, big);
      const n = Number(signed);
      if (!Number.isSafeInteger(n)) throw new ProtoFormatError("varint beyond 2^53");
      return [n, pos];
    }
  }
  throw new ProtoFormatError("varint longer than 10 bytes");
}

/** Iterates the fields of the message stored in `bytes[start, end)`. */
export function* protoFields(
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
): Generator<ProtoField> {
  let pos = start;
  while (pos < end) {
    const tagStart = pos;
    const [tag, afterTag] = readVarint(bytes, pos, end);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0) throw new ProtoFormatError(`field number 0 at offset ${tagStart}`);
    let valueStart = afterTag;
    let valueEnd: number;
    let varint = 0;
    switch (wire) {
      case WireType.VARINT:
        [varint, valueEnd] = readVarint(bytes, afterTag, end);
        break;
      case WireType.I64:
        valueEnd = afterTag + 8;
        break;
      case WireType.I32:
        valueEnd = afterTag + 4;
        break;
      case WireType.LEN: {
        const [length, afterLength] = readVarint(bytes, afterTag, end);
        if (length < 0) throw new ProtoFormatError(`negative length at offset ${tagStart}`);
        valueStart = afterLength;
        valueEnd = afterLength + length;
        break;
      }
      default:
        throw new ProtoFormatError(`unsupported wire type ${wire} at offset ${tagStart}`);
    }
    if (valueEnd > end) throw new ProtoFormatError(`field ${field} runs past its message`);
    yield { field, wire, tagStart, valueStart, end: valueEnd, varint };
    pos = valueEnd;
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The UTF-8 string held by a length-delimited field. */
export function fieldString(bytes: Uint8Array, f: ProtoField): string {
  try {
    return utf8.decode(bytes.subarray(f.valueStart, f.end));
  } catch {
    throw new ProtoFormatError(`field ${f.field} is not valid UTF-8`);
  }
}

/** The integers of a repeated int field, written packed (one LEN field) or one by one. */
export function fieldInts(bytes: Uint8Array, f: ProtoField): number[] {
  if (f.wire === WireType.VARINT) return [f.varint];
  if (f.wire !== WireType.LEN) throw new ProtoFormatError(`field ${f.field} is not an integer`);
  const out: number[] = [];
  let pos = f.valueStart;
  while (pos < f.end) {
    const [v, next] = readVarint(bytes, pos, f.end);
    out.push(v);
    pos = next;
  }
  return out;
}

/** Bytes of a varint encoding of a non-negative integer. */
export function encodeVarint(value: number): Uint8Array {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`cannot encode ${value} as an unsigned varint`);
  }
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Uint8Array.from(out);
}

/** Tag and length prefix of a length-delimited field holding `length` bytes. */
export function lengthPrefix(field: number, length: number): Uint8Array {
  const tag = encodeVarint(field * 8 + WireType.LEN);
  const len = encodeVarint(length);
  const out = new Uint8Array(tag.length + len.length);
  out.set(tag);
  out.set(len, tag.length);
  return out;
}
