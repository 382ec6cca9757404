/**
 * In-memory n-dimensional arrays and their numpy dtype strings.
 *
 * A bare typed array is a 1-D vector; `NdArray` adds a shape (2-D multi-vectors) or an explicit
 * dtype. Both are sent as the numpy 5-entry msgpack map of docs/api.md ("Arrays on the wire").
 */

/** numpy dtype strings the wire uses (`<` little-endian, `|` single byte). */
export type DType =
  | "<f4"
  | "<f2"
  | "<f8"
  | "|i1"
  | "|u1"
  | "<i2"
  | "<u2"
  | "<i4"
  | "<u4";

/** The typed arrays the codec understands. */
export type TypedArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array;

/** Bytes per element of each dtype. */
export const DTYPE_ITEMSIZE: Readonly<Record<DType, number>> = {
  "<f4": 4,
  "<f2": 2,
  "<f8": 8,
  "|i1": 1,
  "|u1": 1,
  "<i2": 2,
  "<u2": 2,
  "<i4": 4,
  "<u4": 4,
};

/** True when `v` is one of the typed arrays in {@link TypedArray}. */
export function isTypedArray(v: unknown): v is TypedArray {
  return v instanceof Float32Array || v instanceof Uint8Array || v instanceof Int8Array ||
    v instanceof Int32Array || v instanceof Uint16Array || v instanceof Float64Array ||
    v instanceof Int16Array || v instanceof Uint32Array;
}

/**
 * Default dtype of a bare typed array. A bare `Uint16Array` means float16 bits (`<f2`): that is the
 * service's in-memory representation of half precision; wrap real uint16 data in an NdArray with
 * dtype `<u2`.
 */
export function dtypeOf(a: TypedArray): DType {
  if (a instanceof Float32Array) return "<f4";
  if (a instanceof Uint8Array) return "|u1";
  if (a instanceof Int8Array) return "|i1";
  if (a instanceof Int32Array) return "<i4";
  if (a instanceof Uint16Array) return "<f2";
  if (a instanceof Float64Array) return "<f8";
  if (a instanceof Int16Array) return "<i2";
  return "<u4";
}

/** The raw bytes behind a typed array (a view, not a copy). */
export function bytesOf(a: TypedArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/**
 * A typed array with a shape and an explicit dtype (C order). It carries an own `__ndarray` brand
 * so that it is still recognised after a structured clone (postMessage from an inference thread
 * drops the class prototype).
 */
export class NdArray<T extends TypedArray = TypedArray> {
  readonly __ndarray = true as const;
  readonly data: T;
  readonly shape: readonly number[];
  readonly dtype: DType;

  constructor(data: T, shape: readonly number[], dtype: DType = dtypeOf(data)) {
    let n = 1;
    for (const d of shape) {
      if (!Number.isInteger(d) || d < 0) throw new RangeError(`invalid ndarray dimension ${d}`);
      n *= d;
    }
    if (n !== data.length) {
      throw new RangeError(
        `shape [${shape.join(",")}] needs ${n} elements, data has ${data.length}`,
      );
    }
    if (DTYPE_ITEMSIZE[dtype] !== data.BYTES_PER_ELEMENT) {
      throw new RangeError(`dtype ${dtype} does not match ${data.constructor.name}`);
    }
    this.data = data;
    this.shape = shape;
    this.dtype = dtype;
  }

  /** A 2-D array of `rows` × `cols` over `data`. */
  static matrix<T extends TypedArray>(
    data: T,
    rows: number,
    cols: number,
    dtype?: DType,
  ): NdArray<T> {
    return new NdArray(data, [rows, cols], dtype ?? dtypeOf(data));
  }

  /** Row `i` of a 2-D array, as a view. */
  row(i: number): T {
    const cols = this.shape[1];
    return this.data.subarray(i * cols, (i + 1) * cols) as T;
  }
}

/** The shape of a structurally cloned NdArray (prototype lost, fields and brand kept). */
interface NdArrayLike {
  __ndarray: true;
  data: TypedArray;
  shape: readonly number[];
  dtype: DType;
}

/** True for an NdArray, including one that went through structured clone. */
export function isNdArray(v: unknown): v is NdArray {
  if (v instanceof NdArray) return true;
  if (typeof v !== "object" || v === null) return false;
  const o = v as Partial<NdArrayLike>;
  return o.__ndarray === true && isTypedArray(o.data) && Array.isArray(o.shape) &&
    typeof o.dtype === "string" && o.dtype in DTYPE_ITEMSIZE;
}

/** The host must be little-endian: the wire carries raw little-endian bytes copied from memory. */
export const HOST_IS_LITTLE_ENDIAN: boolean = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
if (!HOST_IS_LITTLE_ENDIAN) {
  throw new Error("the wire codec copies typed-array bytes as-is and needs a little-endian host");
}
