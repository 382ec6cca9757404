/**
 * The declared inputs and outputs of an ONNX model's main graph (names, element types, shapes),
 * read from the file without loading it: the weights (initializers, nodes) are skipped by seeking
 * past them, so a model of any size costs a few reads. Used to tell what an export is (a masked-LM
 * head or a plain encoder, pooled or per-token outputs, the output width) before it is served.
 */
import {
  fieldString,
  type ProtoField,
  protoFields,
  ProtoFormatError,
  readField,
  WireType,
} from "./protobuf.ts";
import {
  dataTypeName,
  DimensionField,
  GraphField,
  ModelField,
  ShapeField,
  TensorTypeField,
  TypeField,
  ValueInfoField,
} from "./schema.ts";

/** One declared graph input or output: a dimension is a size, or a symbolic name (`batch`). */
export interface GraphValue {
  name: string;
  /** Element type (`float32`, `int64`...), `unknown` when the graph does not declare one. */
  type: string;
  dims: (number | string)[];
}

/** The declared inputs and outputs of a graph, in declaration order. */
export interface GraphSignature {
  inputs: GraphValue[];
  outputs: GraphValue[];
}

/** Largest ValueInfoProto read (a name and a shape: a few hundred bytes in practice). */
const MAX_VALUE_INFO_BYTES = 64 * 1024;

/** Most inputs plus outputs read from one graph. */
const MAX_VALUES = 4096;

/** Bytes read at a time. */
const WINDOW = 64 * 1024;

/** Reads a file at arbitrary offsets through one window (varint headers are small and local). */
class WindowedFile {
  #buf = new Uint8Array(0);
  #at = 0;

  constructor(private readonly file: Deno.FsFile, readonly size: number) {}

  /** At least `n` bytes from `pos` (fewer only at the end of the file), as a view. */
  async bytes(pos: number, n: number): Promise<Uint8Array> {
    const end = Math.min(this.size, pos + n);
    if (pos >= this.#at && end <= this.#at + this.#buf.length) {
      return this.#buf.subarray(pos - this.#at, end - this.#at);
    }
    const buf = new Uint8Array(Math.min(this.size - pos, Math.max(n, WINDOW)));
    await this.file.seek(pos, Deno.SeekMode.Start);
    let filled = 0;
    while (filled < buf.length) {
      const got = await this.file.read(buf.subarray(filled));
      if (got === null) break;
      filled += got;
    }
    this.#buf = buf.subarray(0, filled);
    this.#at = pos;
    return this.#buf.subarray(0, Math.min(filled, end - pos));
  }

  /** The field header at `pos` (tag, and length for LEN fields), within `[pos, limit)`. */
  async header(pos: number, limit: number): Promise<ProtoField> {
    // A tag and a length are at most 10 bytes each.
    const head = await this.bytes(pos, 20);
    return readField(head, 0, Math.min(head.length, limit - pos), pos, limit);
  }
}

/**
 * The graph signature of the ONNX file at `path`. Throws a ProtoFormatError when the file is not
 * an ONNX model (or is cut short), and the file system's error when it cannot be read.
 */
export async function readGraphSignature(path: string): Promise<GraphSignature> {
  using file = await Deno.open(path, { read: true });
  const size = (await file.stat()).size;
  const w = new WindowedFile(file, size);
  const sig: GraphSignature = { inputs: [], outputs: [] };
  let graphs = 0;
  for (let pos = 0; pos < size;) {
    const f = await w.header(pos, size);
    if (f.field === ModelField.GRAPH && f.wire === WireType.LEN) {
      graphs++;
      await readGraph(w, f.valueStart, f.end, sig);
    }
    pos = f.end;
  }
  if (graphs === 0) throw new ProtoFormatError("no graph in the file: not an ONNX model");
  return sig;
}

async function readGraph(
  w: WindowedFile,
  start: number,
  end: number,
  sig: GraphSignature,
): Promise<void> {
  for (let pos = start; pos < end;) {
    const f = await w.header(pos, end);
    const isInput = f.field === GraphField.INPUT;
    if ((isInput || f.field === GraphField.OUTPUT) && f.wire === WireType.LEN) {
      const length = f.end - f.valueStart;
      if (length > MAX_VALUE_INFO_BYTES) {
        throw new ProtoFormatError(`graph ${isInput ? "input" : "output"} is too large`);
      }
      if (sig.inputs.length + sig.outputs.length >= MAX_VALUES) {
        throw new ProtoFormatError(`graph declares more than ${MAX_VALUES} inputs and outputs`);
      }
      const bytes = (await w.bytes(f.valueStart, length)).slice();
      (isInput ? sig.inputs : sig.outputs).push(valueInfo(bytes));
    }
    pos = f.end;
  }
}

/** One ValueInfoProto: name, element type, shape. */
function valueInfo(bytes: Uint8Array): GraphValue {
  const v: GraphValue = { name: "", type: "unknown", dims: [] };
  for (const f of protoFields(bytes)) {
    if (f.field === ValueInfoField.NAME && f.wire === WireType.LEN) v.name = fieldString(bytes, f);
    if (f.field !== ValueInfoField.TYPE || f.wire !== WireType.LEN) continue;
    for (const t of protoFields(bytes, f.valueStart, f.end)) {
      if (t.field !== TypeField.TENSOR_TYPE || t.wire !== WireType.LEN) continue;
      for (const tt of protoFields(bytes, t.valueStart, t.end)) {
        const type = tt.field === TensorTypeField.ELEM_TYPE && tt.wire === WireType.VARINT;
        if (type) v.type = dataTypeName(tt.varint);
        if (tt.field === TensorTypeField.SHAPE && tt.wire === WireType.LEN) {
          v.dims = shapeDims(bytes, tt);
        }
      }
    }
  }
  return v;
}

function shapeDims(bytes: Uint8Array, shape: ProtoField): (number | string)[] {
  const dims: (number | string)[] = [];
  for (const d of protoFields(bytes, shape.valueStart, shape.end)) {
    if (d.field !== ShapeField.DIM || d.wire !== WireType.LEN) continue;
    let dim: number | string = "?";
    for (const x of protoFields(bytes, d.valueStart, d.end)) {
      if (x.field === DimensionField.DIM_VALUE && x.wire === WireType.VARINT) dim = x.varint;
      if (x.field === DimensionField.DIM_PARAM && x.wire === WireType.LEN) {
        dim = fieldString(bytes, x);
      }
    }
    dims.push(dim);
  }
  return dims;
}
