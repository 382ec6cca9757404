/**
 * The numpy arrays of a msgpack answer: the 5-entry map with `bin` keys (nd, type, kind, shape,
 * data) that the service writes for every vector (docs/api.md). This is the one decoder of that
 * form: the client types its answers with it, and the tests read the server's responses with it.
 */

/** A numpy array as it arrives: dtype string, shape, and the raw little-endian element bytes. */
export interface NumpyArray {
  type: string;
  shape: number[];
  data: Uint8Array;
}

/** The typed arrays a numpy array's elements come back as (float16 as its Uint16Array bits). */
export type NumpyElements =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array;

const latin1 = new TextDecoder("latin1");

const VIEWS: Readonly<Record<string, (b: ArrayBuffer) => NumpyElements>> = {
  "<f4": (b) => new Float32Array(b),
  "<f2": (b) => new Uint16Array(b),
  "<f8": (b) => new Float64Array(b),
  "|i1": (b) => new Int8Array(b),
  "|u1": (b) => new Uint8Array(b),
  "<i2": (b) => new Int16Array(b),
  "<u2": (b) => new Uint16Array(b),
  "<i4": (b) => new Int32Array(b),
  "<u4": (b) => new Uint32Array(b),
};

/** The numpy map `m` (decoded with maps kept as Maps) as a NumpyArray, else undefined. */
export function readNumpyMap(m: Map<unknown, unknown>): NumpyArray | undefined {
  if (m.size !== 5) return undefined;
  const f = new Map<string, unknown>();
  for (const [k, v] of m) if (k instanceof Uint8Array) f.set(latin1.decode(k), v);
  const type = f.get("type");
  const shape = f.get("shape");
  const data = f.get("data");
  if (f.get("nd") !== true || typeof type !== "string" || !Array.isArray(shape)) return undefined;
  if (!(data instanceof Uint8Array)) return undefined;
  return { type, shape: shape as number[], data };
}

/** True when the dtype is one {@link numpyElements} reads. */
export function isKnownDtype(type: string): boolean {
  return Object.hasOwn(VIEWS, type);
}

/**
 * The elements as the typed array of their dtype, in a fresh aligned buffer (a `bin` view may
 * start at any offset of the body); throws a TypeError for a dtype it does not know.
 */
export function numpyElements(a: NumpyArray): NumpyElements {
  if (!isKnownDtype(a.type)) throw new TypeError(`unexpected array type ${a.type}`);
  return VIEWS[a.type](a.data.slice().buffer as ArrayBuffer);
}
