// Own code: ONNX needs five protobuf wire primitives; a protobuf package needs onnx.proto built in.
/**
 * Minimal protobuf wire-format writer: just what ONNX model files need (varints, fixed32 floats,
 * strings, bytes and nested messages). Output is kept as a list of chunks so that embedding a large
 * tensor (hundreds of MB of raw weights) or a nested message never copies it until the final concat.
 */

const WIRE_VARINT = 0;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

/** Accumulates the encoded fields of one protobuf message. */
export class ProtoWriter {
  #chunks: Uint8Array[] = [];
  #pending: number[] = [];
  #length = 0;

  /** Encoded size in bytes so far. */
  get length(): number {
    return this.#length;
  }

  /** Varint field (int32/int64/uint64/enum/bool); negative values use 64-bit two's complement. */
  varint(field: number, value: number | bigint): this {
    this.#tag(field, WIRE_VARINT);
    this.#varint(value);
    return this;
  }

  /** Repeated varint field, unpacked (one tag per value, the proto2 default ONNX declares). */
  varints(field: number, values: readonly (number | bigint)[]): this {
    for (const v of values) this.varint(field, v);
    return this;
  }

  /** `float` field (fixed32, little-endian IEEE 754 single precision). */
  float(field: number, value: number): this {
    this.#tag(field, WIRE_FIXED32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    for (const x of b) this.#byte(x);
    return this;
  }

  /** Repeated `float` field, unpacked. */
  floats(field: number, values: readonly number[]): this {
    for (const v of values) this.float(field, v);
    return this;
  }

  /** `string` field (UTF-8). */
  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  /** Repeated `string` field. */
  strings(field: number, values: readonly string[]): this {
    for (const v of values) this.string(field, v);
    return this;
  }

  /** `bytes` field; the array is referenced, not copied, until `finish()`. */
  bytes(field: number, value: Uint8Array): this {
    this.#tag(field, WIRE_LEN);
    this.#varint(value.length);
    this.#chunk(value);
    return this;
  }

  /** Embedded message field; the nested writer's chunks are adopted without copying. */
  message(field: number, nested: ProtoWriter): this {
    this.#tag(field, WIRE_LEN);
    this.#varint(nested.length);
    this.#flush();
    for (const c of nested.chunks()) {
      this.#chunks.push(c);
      this.#length += c.length;
    }
    return this;
  }

  /** The encoded message as chunks (in order); concatenated they are the message bytes. */
  chunks(): Uint8Array[] {
    this.#flush();
    return this.#chunks;
  }

  /** The encoded message as one contiguous array. */
  finish(): Uint8Array {
    const out = new Uint8Array(this.#length);
    let at = 0;
    for (const c of this.chunks()) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  #tag(field: number, wire: number): void {
    if (!Number.isInteger(field) || field < 1) throw new RangeError(`bad field number ${field}`);
    this.#varint(field * 8 + wire);
  }

  #varint(value: number | bigint): void {
    if (typeof value === "number") {
      if (!Number.isSafeInteger(value)) throw new RangeError(`varint needs an integer: ${value}`);
      // Fast path for the common small non-negative case; the rest goes through BigInt.
      if (value < 0 || value > 0x7fffffff) return this.#varint(BigInt(value));
      while (value > 127) {
        this.#byte((value & 0x7f) | 0x80);
        value >>>= 7;
      }
      this.#byte(value);
      return;
    }
    let v = BigInt.asUintN(64, value);
    while (v > 127n) {
      this.#byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.#byte(Number(v));
  }

  #byte(b: number): void {
    this.#pending.push(b);
    this.#length += 1;
  }

  #chunk(c: Uint8Array): void {
    this.#flush();
    this.#chunks.push(c);
    this.#length += c.length;
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    this.#chunks.push(Uint8Array.from(this.#pending));
    this.#pending = [];
  }
}
