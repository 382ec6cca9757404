/**
 * Bodies on the wire, for the client: requests as msgpack (bytes stay `bin`) or JSON (bytes as
 * base64), answers decoded so that every vector is a typed array whatever the format. Only the
 * pure-JS halves of msgpackr are imported: no native code, no environment access.
 */
import { Packr } from "msgpackr/pack";
import { Unpackr } from "msgpackr/unpack";
import { float16ToFloat32 } from "@svc/shared/codec/float16";
import type { OutputDtype, VectorValues } from "./types.ts";

/** Wire format of requests and answers. */
export type WireFormat = "msgpack" | "json";

const packr = new Packr({ useRecords: false });
/** Maps stay Maps: the numpy map's keys are `bin`, which plain objects cannot hold. */
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: "number" });
const latin1 = new TextDecoder("latin1");

/** Content type of a request body in `format`. */
export function contentType(format: WireFormat): string {
  return format === "msgpack" ? "application/msgpack" : "application/json";
}

/** Encode a request body. In JSON, byte arrays (image data) become base64 strings. */
export function encodeBody(body: unknown, format: WireFormat): Uint8Array | string {
  if (format === "msgpack") return packr.pack(body);
  return JSON.stringify(body, (_k, v) => (v instanceof Uint8Array ? bytesToBase64(v) : v));
}

/** Standard base64 of bytes (btoa exists in Deno, Node and browsers). */
export function bytesToBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** A numpy-style array from the msgpack answer, before it becomes a typed array. */
interface WireArray {
  type: string;
  shape: number[];
  data: Uint8Array;
}

/** The numpy map (5 `bin` keys: nd, type, kind, shape, data) as a WireArray, else undefined. */
function numpyMap(m: Map<unknown, unknown>): WireArray | undefined {
  if (m.size !== 5) return undefined;
  const f = new Map<string, unknown>();
  for (const [k, v] of m) if (k instanceof Uint8Array) f.set(latin1.decode(k), v);
  const { type, shape, data } = Object.fromEntries(f) as Record<string, unknown>;
  if (f.get("nd") !== true || typeof type !== "string" || !Array.isArray(shape)) return undefined;
  if (!(data instanceof Uint8Array)) return undefined;
  return { type, shape: shape as number[], data };
}

/** Msgpack → plain values; numpy maps stay WireArrays until {@link shapeVectors} types them. */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (!(v instanceof Map)) return v;
  const nd = numpyMap(v);
  if (nd) return nd;
  const o: Record<string, unknown> = {};
  for (const [k, x] of v) {
    // defineProperty: a "__proto__" key stays data instead of replacing the prototype.
    Object.defineProperty(o, String(k), { value: plain(x), enumerable: true, writable: true });
  }
  return o;
}

/** Decode an answer body by its content type. */
export function decodeAnswer(bytes: Uint8Array, contentTypeHeader: string | null): unknown {
  if ((contentTypeHeader ?? "").includes("msgpack")) return plain(unpackr.unpack(bytes));
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** Copy into a fresh, aligned buffer (a `bin` view may start at any offset of the body). */
function aligned(data: Uint8Array): ArrayBuffer {
  return data.slice().buffer as ArrayBuffer;
}

/** A WireArray's elements as the typed array the client returns for `dtype`. */
function typedFromWire(a: WireArray): VectorValues | Int32Array {
  switch (a.type) {
    case "<f4":
      return new Float32Array(aligned(a.data));
    case "<f2":
      return float16ToFloat32(new Uint16Array(aligned(a.data)));
    case "|i1":
      return new Int8Array(aligned(a.data));
    case "|u1":
      return new Uint8Array(aligned(a.data));
    case "<i4":
      return new Int32Array(aligned(a.data));
    default:
      throw new TypeError(`unexpected array type ${a.type}`);
  }
}

/** The typed array of a JSON list at `dtype`. */
function typedFromList(list: number[], dtype: OutputDtype): VectorValues {
  switch (dtype) {
    case "int8":
      return Int8Array.from(list);
    case "uint8":
    case "binary":
    case "ubinary":
      return Uint8Array.from(list);
    default:
      return Float32Array.from(list);
  }
}

function isWireArray(v: unknown): v is WireArray {
  return typeof v === "object" && v !== null && "data" in v && "shape" in v && "type" in v &&
    (v as WireArray).data instanceof Uint8Array;
}

/** One vector's values (msgpack WireArray or JSON list) as a typed array. */
function vector(v: unknown, dtype: OutputDtype): VectorValues {
  if (isWireArray(v)) return typedFromWire(v) as VectorValues;
  if (Array.isArray(v)) return typedFromList(v as number[], dtype);
  throw new TypeError("a vector is neither a numpy array nor a list");
}

/** Rows of a multi-vector: views into one typed array (msgpack) or one array per row (JSON). */
function rows(v: unknown, dtype: OutputDtype): VectorValues[] {
  if (isWireArray(v)) {
    const all = typedFromWire(v) as VectorValues;
    const [n, width] = v.shape.length === 2 ? v.shape : [0, 0];
    return Array.from({ length: n }, (_, i) => all.subarray(i * width, (i + 1) * width));
  }
  if (Array.isArray(v)) return v.map((r) => typedFromList(r as number[], dtype));
  throw new TypeError("a multi-vector is neither a numpy array nor a list of lists");
}

type Obj = Record<string, unknown>;

/** Give every vector of an encode answer its typed array (in place; returns the body). */
export function shapeEncodeAnswer(body: unknown): unknown {
  for (const item of ((body as Obj).items ?? []) as Obj[]) {
    const dense = item.dense as Obj | undefined;
    if (dense) dense.values = vector(dense.values, dense.dtype as OutputDtype);
    const sparse = item.sparse as Obj | undefined;
    if (sparse) {
      sparse.indices = isWireArray(sparse.indices)
        ? typedFromWire(sparse.indices)
        : Int32Array.from(sparse.indices as number[]);
      // Sparse values are float32 or float16 on the wire; both come back as Float32Array.
      sparse.values = vector(sparse.values, "float32");
    }
    const multi = item.multivector as Obj | undefined;
    if (multi) multi.values = rows(multi.values, multi.dtype as OutputDtype);
  }
  return body;
}

/** Give every embedding of an `/v1/embeddings` answer a Float32Array (in place). */
export function shapeEmbeddingsAnswer(body: unknown): unknown {
  for (const d of ((body as Obj).data ?? []) as Obj[]) {
    d.embedding = Float32Array.from(d.embedding as number[]);
  }
  return body;
}
