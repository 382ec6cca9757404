/**
 * An index of an ONNX model's main graph: its nodes (name, operator, inputs, outputs, integer
 * attributes) and its initializers (name, type, shape, where their data lies). Built by walking
 * the protobuf without copying weights, so indexing a large model costs little more than a scan
 * of its field headers. Field numbers follow onnx/onnx.proto.
 */
import {
  fieldInts,
  fieldString,
  type ProtoField,
  protoFields,
  ProtoFormatError,
  WireType,
} from "./protobuf.ts";
import {
  AttributeField as ATTR,
  AttributeType,
  GraphField as GRAPH,
  LOCATION_EXTERNAL,
  ModelField,
  NodeField as NODE,
  TensorField as TENSOR,
} from "./schema.ts";

/** Where an initializer's values are stored. */
export type TensorData =
  /** `raw_data`: little-endian bytes at `[start, end)`. */
  | { kind: "raw"; start: number; end: number }
  /** `float_data` (packed or not), each field as a byte range. */
  | { kind: "float_data"; ranges: { start: number; end: number; packed: boolean }[] }
  /** `data_location = EXTERNAL`: in another file. */
  | { kind: "external" }
  /** Another typed field (int32_data, int64_data...) or none: not read here. */
  | { kind: "other" };

/** One initializer of the main graph. */
export interface InitializerRef {
  name: string;
  dataType: number;
  dims: number[];
  data: TensorData;
  /** The whole field in the graph message (tag included): what a patch replaces. */
  fieldStart: number;
  fieldEnd: number;
  /** The TensorProto message body. */
  bodyStart: number;
  bodyEnd: number;
}

/** One node of the main graph. */
export interface NodeRef {
  name: string;
  opType: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  /** INT attributes by name (e.g. Gemm's `transB`). */
  ints: Record<string, number>;
  /** INTS attributes by name (e.g. Transpose's `perm`). */
  intLists: Record<string, number[]>;
}

/** The index of a model's main graph. */
export interface OnnxIndex {
  bytes: Uint8Array;
  /** The ModelProto.graph field (tag included) and its body. */
  graph: { fieldStart: number; bodyStart: number; bodyEnd: number };
  nodes: NodeRef[];
  initializers: Map<string, InitializerRef>;
}

const TYPED_DATA_FIELDS: ReadonlySet<number> = new Set([
  TENSOR.INT32_DATA,
  TENSOR.STRING_DATA,
  TENSOR.INT64_DATA,
  TENSOR.DOUBLE_DATA,
  TENSOR.UINT64_DATA,
]);

/** Index the main graph of the model in `bytes` (an `.onnx` file's content). */
export function indexOnnxModel(bytes: Uint8Array): OnnxIndex {
  let graph: ProtoField | undefined;
  for (const f of protoFields(bytes)) {
    if (f.field !== ModelField.GRAPH) continue;
    if (f.wire !== WireType.LEN) throw new ProtoFormatError("ModelProto.graph is not a message");
    // Protobuf would merge repeated occurrences; exporters never write them, and a patch
    // must know the one place the graph lives.
    if (graph) throw new ProtoFormatError("the model holds more than one graph field");
    graph = f;
  }
  if (!graph) throw new ProtoFormatError("not an ONNX model: no graph");
  const nodes: NodeRef[] = [];
  const initializers = new Map<string, InitializerRef>();
  for (const f of protoFields(bytes, graph.valueStart, graph.end)) {
    if (f.wire !== WireType.LEN) continue;
    if (f.field === GRAPH.NODE) nodes.push(readNode(bytes, f));
    else if (f.field === GRAPH.INITIALIZER) {
      const t = readInitializer(bytes, f);
      if (initializers.has(t.name)) {
        throw new ProtoFormatError(`initializer '${t.name}' is defined twice`);
      }
      initializers.set(t.name, t);
    }
  }
  return {
    bytes,
    graph: { fieldStart: graph.tagStart, bodyStart: graph.valueStart, bodyEnd: graph.end },
    nodes,
    initializers,
  };
}

function readNode(bytes: Uint8Array, msg: ProtoField): NodeRef {
  const node: NodeRef = {
    name: "",
    opType: "",
    domain: "",
    inputs: [],
    outputs: [],
    ints: {},
    intLists: {},
  };
  for (const f of protoFields(bytes, msg.valueStart, msg.end)) {
    if (f.wire !== WireType.LEN) continue;
    switch (f.field) {
      case NODE.INPUT:
        node.inputs.push(fieldString(bytes, f));
        break;
      case NODE.OUTPUT:
        node.outputs.push(fieldString(bytes, f));
        break;
      case NODE.NAME:
        node.name = fieldString(bytes, f);
        break;
      case NODE.OP_TYPE:
        node.opType = fieldString(bytes, f);
        break;
      case NODE.DOMAIN:
        node.domain = fieldString(bytes, f);
        break;
      case NODE.ATTRIBUTE: {
        const a = readIntAttribute(bytes, f);
        if (a?.kind === "int") node.ints[a.name] = a.value;
        else if (a?.kind === "ints") node.intLists[a.name] = a.values;
      }
    }
  }
  return node;
}

/** An INT or INTS attribute; undefined for other attribute types. */
function readIntAttribute(
  bytes: Uint8Array,
  msg: ProtoField,
):
  | { kind: "int"; name: string; value: number }
  | { kind: "ints"; name: string; values: number[] }
  | undefined {
  let name = "";
  let value: number | undefined;
  let values: number[] | undefined;
  let type: number | undefined;
  for (const f of protoFields(bytes, msg.valueStart, msg.end)) {
    if (f.field === ATTR.NAME && f.wire === WireType.LEN) name = fieldString(bytes, f);
    else if (f.field === ATTR.I && f.wire === WireType.VARINT) value = f.varint;
    else if (f.field === ATTR.INTS) (values ??= []).push(...fieldInts(bytes, f));
    else if (f.field === ATTR.TYPE && f.wire === WireType.VARINT) type = f.varint;
  }
  // Old exporters leave `type` out; the field that is present then says what it is.
  if (value !== undefined && (type === undefined || type === AttributeType.INT)) {
    return { kind: "int", name, value };
  }
  if (values !== undefined && (type === undefined || type === AttributeType.INTS)) {
    return { kind: "ints", name, values };
  }
  return undefined;
}

function readInitializer(bytes: Uint8Array, msg: ProtoField): InitializerRef {
  const t: InitializerRef = {
    name: "",
    dataType: 0,
    dims: [],
    data: { kind: "other" },
    fieldStart: msg.tagStart,
    fieldEnd: msg.end,
    bodyStart: msg.valueStart,
    bodyEnd: msg.end,
  };
  const floatRanges: { start: number; end: number; packed: boolean }[] = [];
  let raw: { start: number; end: number } | undefined;
  let external = false;
  for (const f of protoFields(bytes, msg.valueStart, msg.end)) {
    switch (f.field) {
      case TENSOR.DIMS:
        t.dims.push(...fieldInts(bytes, f));
        break;
      case TENSOR.DATA_TYPE:
        t.dataType = f.varint;
        break;
      case TENSOR.NAME:
        t.name = fieldString(bytes, f);
        break;
      case TENSOR.RAW_DATA:
        raw = { start: f.valueStart, end: f.end };
        break;
      case TENSOR.FLOAT_DATA:
        floatRanges.push({ start: f.valueStart, end: f.end, packed: f.wire === WireType.LEN });
        break;
      case TENSOR.EXTERNAL_DATA:
        external = true;
        break;
      case TENSOR.DATA_LOCATION:
        if (f.varint === LOCATION_EXTERNAL) external = true;
    }
  }
  if (t.dims.some((d) => d < 0)) throw new ProtoFormatError(`initializer '${t.name}' has dims < 0`);
  if (external) t.data = { kind: "external" };
  else if (raw) t.data = { kind: "raw", ...raw };
  else if (floatRanges.length > 0) t.data = { kind: "float_data", ranges: floatRanges };
  return t;
}

/** Number of elements of a shape. */
export function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

/** True when `field` is one of TensorProto's value fields (raw_data, float_data, int64_data...). */
export function isTensorValueField(field: number): boolean {
  return field === TENSOR.RAW_DATA || field === TENSOR.FLOAT_DATA ||
    field === TENSOR.EXTERNAL_DATA || field === TENSOR.DATA_LOCATION ||
    TYPED_DATA_FIELDS.has(field);
}
