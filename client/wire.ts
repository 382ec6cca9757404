/**
 * Bodies on the wire, for the client: requests as msgpack (bytes stay `bin`) or JSON (bytes as
 * base64), answers decoded so that every vector is a typed array whatever the format. Only the
 * pure-JS halves of msgpackr are imported: no native code, no environment access.
 */
import { Packr } from "msgpackr/pack";
import { Unpackr } from "msgpackr/unpack";
import { float16ToFloat32 } from "@svc/shared/codec/float16";
import { type NumpyArray, numpyElements, readNumpyMap } from "./numpy.ts";
import type { OutputDtype, VectorValues } from "./types.ts";

/** Wire format of requests and answers. */
export type WireFormat = "msgpack" | "json";

const packr = new Packr({ useRecords: false });
/** Maps stay Maps: the numpy map's keys are `bin`, which plain objects cannot hold. */
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: "number" });

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

/** Msgpack → plain values; numpy maps stay NumpyArrays until the answer is shaped. */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (!(v instanceof Map)) return v;
  const nd = readNumpyMap(v);
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

/** A NumpyArray's elements as the typed array the client returns (float16 widened to float32). */
function typedFromWire(a: NumpyArray): VectorValues | Int32Array {
  switch (a.type) {
    case "<f2":
      return float16ToFloat32(numpyElements(a) as Uint16Array);
    case "<f4":
    case "|i1":
    case "|u1":
    case "<i4":
      return numpyElements(a) as VectorValues | Int32Array;
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

function isNumpyArray(v: unknown): v is NumpyArray {
  return typeof v === "object" && v !== null && "data" in v && "shape" in v && "type" in v &&
    (v as NumpyArray).data instanceof Uint8Array;
}

/** One vector's values (msgpack NumpyArray or JSON list) as a typed array. */
function vector(v: unknown, dtype: OutputDtype): VectorValues {
  if (isNumpyArray(v)) return typedFromWire(v) as VectorValues;
  if (Array.isArray(v)) return typedFromList(v as number[], dtype);
  throw new TypeError("a vector is neither a numpy array nor a list");
}

/** Rows of a multi-vector: views into one typed array (msgpack) or one array per row (JSON). */
function rows(v: unknown, dtype: OutputDtype): VectorValues[] {
  if (isNumpyArray(v)) {
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
      sparse.indices = isNumpyArray(sparse.indices)
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
