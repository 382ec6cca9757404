/**
 * The declared inputs and outputs of an ONNX model's main graph (names, element types, shapes),
 * read from the file without loading it: the weights (initializers, nodes) are skipped by seeking
 * past them, so a model of any size costs a few reads. Used to tell what an export is (a masked-LM
 * head or a plain encoder, pooled or per-token outputs, the output width) before it is served.
 * Field numbers follow onnx/onnx.proto: ModelProto.graph = 7; GraphProto.input = 11, output = 12;
 * ValueInfoProto.name = 1, type = 2; TypeProto.tensor_type = 1; Tensor.elem_type = 1, shape = 2;
 * TensorShapeProto.dim = 1; Dimension.dim_value = 1, dim_param = 2.
 */
import { dataTypeName } from "./model.ts";
import {
  fieldString,
  type ProtoField,
  protoFields,
  ProtoFormatError,
  readVarint,
  WireType,
} from "./protobuf.ts";

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
    const end = Math.min(head.length, limit - pos);
    const [tag, afterTag] = readVarint(head, 0, end);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0) throw new ProtoFormatError(`field number 0 at offset ${pos}`);
    let valueStart = afterTag;
    let valueEnd: number;
    let varint = 0;
    switch (wire) {
      case WireType.VARINT:
        [varint, valueEnd] = readVarint(head, afterTag, end);
        break;
      case WireType.I64:
        valueEnd = afterTag + 8;
        break;
      case WireType.I32:
        valueEnd = afterTag + 4;
        break;
      case WireType.LEN: {
        const [length, afterLength] = readVarint(head, afterTag, end);
        valueStart = afterLength;
        valueEnd = afterLength + length;
        break;
      }
      default:
        throw new ProtoFormatError(`unsupported wire type ${wire} at offset ${pos}`);
    }
    if (pos + valueEnd > limit) {
      throw new ProtoFormatError(`field ${field} at offset ${pos} runs past its message`);
    }
    return {
      field,
      wire,
      tagStart: pos,
      valueStart: pos + valueStart,
      end: pos + valueEnd,
      varint,
    };
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
    if (f.field === 7 && f.wire === WireType.LEN) {
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
    if ((f.field === 11 || f.field === 12) && f.wire === WireType.LEN) {
      const length = f.end - f.valueStart;
      if (length > MAX_VALUE_INFO_BYTES) {
        throw new ProtoFormatError(`graph ${f.field === 11 ? "input" : "output"} is too large`);
      }
      if (sig.inputs.length + sig.outputs.length >= MAX_VALUES) {
        throw new ProtoFormatError(`graph declares more than ${MAX_VALUES} inputs and outputs`);
      }
      const bytes = (await w.bytes(f.valueStart, length)).slice();
      (f.field === 11 ? sig.inputs : sig.outputs).push(valueInfo(bytes));
    }
    pos = f.end;
  }
}

/** One ValueInfoProto: name, element type, shape. */
function valueInfo(bytes: Uint8Array): GraphValue {
  const v: GraphValue = { name: "", type: "unknown", dims: [] };
  for (const f of protoFields(bytes)) {
    if (f.field === 1 && f.wire === WireType.LEN) v.name = fieldString(bytes, f);
    if (f.field !== 2 || f.wire !== WireType.LEN) continue;
    for (const t of protoFields(bytes, f.valueStart, f.end)) {
      if (t.field !== 1 || t.wire !== WireType.LEN) continue; // tensor_type
      for (const tt of protoFields(bytes, t.valueStart, t.end)) {
        if (tt.field === 1 && tt.wire === WireType.VARINT) v.type = dataTypeName(tt.varint);
        if (tt.field === 2 && tt.wire === WireType.LEN) v.dims = shapeDims(bytes, tt);
      }
    }
  }
  return v;
}

function shapeDims(bytes: Uint8Array, shape: ProtoField): (number | string)[] {
  const dims: (number | string)[] = [];
  for (const d of protoFields(bytes, shape.valueStart, shape.end)) {
    if (d.field !== 1 || d.wire !== WireType.LEN) continue;
    let dim: number | string = "?";
    for (const x of protoFields(bytes, d.valueStart, d.end)) {
      if (x.field === 1 && x.wire === WireType.VARINT) dim = x.varint;
      if (x.field === 2 && x.wire === WireType.LEN) dim = fieldString(bytes, x);
    }
    dims.push(dim);
  }
  return dims;
}
