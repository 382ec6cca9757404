/**
 * Floating-point tensor values between their little-endian storage (float32, float16, bfloat16)
 * and Float32Array, for the weights LoRA reads and rewrites. Little-endian is the storage order of
 * both ONNX raw_data and safetensors; the typed arrays here use the host order, so big-endian
 * hosts get a byte swap (none we run on, but silent corruption would be worse than a copy).
 */
import { float16ToFloat32, float32ToFloat16 } from "@svc/shared/codec/float16";

/** Float element types this module converts. */
export type FloatType = "float32" | "float16" | "bfloat16";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Bytes per element of a float type. */
export function floatTypeSize(type: FloatType): number {
  return type === "float32" ? 4 : 2;
}

/** Decode `count` little-endian values of `type` from `bytes` into a new Float32Array. */
export function decodeFloats(bytes: Uint8Array, type: FloatType, count: number): Float32Array {
  const size = floatTypeSize(type);
  if (bytes.length !== count * size) {
    throw new RangeError(`${bytes.length} bytes cannot hold ${count} ${type} values`);
  }
  // A copy with the right alignment (the source may sit at any offset of a larger file).
  const own = hostOrder(bytes.slice(), size);
  switch (type) {
    case "float32":
      return new Float32Array(own.buffer, 0, count);
    case "float16":
      return float16ToFloat32(new Uint16Array(own.buffer, 0, count));
    case "bfloat16": {
      const half = new Uint16Array(own.buffer, 0, count);
      const out = new Float32Array(count);
      const bits = new Uint32Array(out.buffer);
      // bfloat16 is the top half of a float32.
      for (let i = 0; i < count; i++) bits[i] = half[i] << 16;
      return out;
    }
  }
}

/** Encode `values` as little-endian `type` bytes (round to nearest even for the 16-bit types). */
export function encodeFloats(values: Float32Array, type: FloatType): Uint8Array {
  switch (type) {
    case "float32":
      return littleEndian(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), 4);
    case "float16": {
      const half = float32ToFloat16(values);
      return littleEndian(new Uint8Array(half.buffer, half.byteOffset, half.byteLength), 2);
    }
    case "bfloat16": {
      const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
      const out = new Uint16Array(values.length);
      for (let i = 0; i < values.length; i++) out[i] = float32BitsToBfloat16(bits[i]);
      return littleEndian(new Uint8Array(out.buffer), 2);
    }
  }
}

/** Round float32 bits to bfloat16 bits (nearest, ties to even; NaN stays NaN). */
export function float32BitsToBfloat16(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) {
    return ((bits >>> 16) | 0x40) & 0xffff;
  }
  const lsb = (bits >>> 16) & 1;
  return ((bits + 0x7fff + lsb) >>> 16) & 0xffff;
}

/** `bytes` in host order (a copy is swapped in place on big-endian hosts). */
function hostOrder(bytes: Uint8Array, size: number): Uint8Array {
  if (!LITTLE_ENDIAN) swapInPlace(bytes, size);
  return bytes;
}

/** `view` as little-endian bytes: itself on little-endian hosts, else a swapped copy. */
function littleEndian(view: Uint8Array, size: number): Uint8Array {
  if (LITTLE_ENDIAN) return view;
  const out = view.slice();
  swapInPlace(out, size);
  return out;
}

function swapInPlace(bytes: Uint8Array, size: number): void {
  for (let i = 0; i < bytes.length; i += size) bytes.subarray(i, i + size).reverse();
}
