/**
 * ONNX message shapes (a subset of onnx.proto, enough for inference graphs) and their protobuf
 * encoding. Field numbers follow onnx/onnx.proto; only fields we emit are listed.
 */
import { ProtoWriter } from "./protobuf.ts";

/** TensorProto.DataType values we use. */
export const DataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
} as const;
/** A TensorProto.DataType value. */
export type DataTypeCode = typeof DataType[keyof typeof DataType];

/** A constant tensor stored as little-endian raw bytes (TensorProto.raw_data). */
export interface TensorMsg {
  name: string;
  dataType: DataTypeCode;
  dims: readonly number[];
  rawData: Uint8Array;
}

/** One attribute value; the variant decides the AttributeProto type. */
export type AttributeMsg =
  | { name: string; kind: "int"; value: number }
  | { name: string; kind: "float"; value: number }
  | { name: string; kind: "string"; value: string }
  | { name: string; kind: "ints"; value: readonly number[] }
  | { name: string; kind: "floats"; value: readonly number[] }
  | { name: string; kind: "tensor"; value: TensorMsg };

/** A graph node (NodeProto). */
export interface NodeMsg {
  name: string;
  opType: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attributes: readonly AttributeMsg[];
  domain?: string;
}

/** A dimension: a fixed size, or a symbolic name such as "batch". */
export type Dim = number | string;

/** A typed tensor value declaration (ValueInfoProto with a tensor type). */
export interface ValueInfoMsg {
  name: string;
  elemType: DataTypeCode;
  dims: readonly Dim[];
}

/** A computation graph (GraphProto). */
export interface GraphMsg {
  name: string;
  nodes: readonly NodeMsg[];
  initializers: readonly TensorMsg[];
  inputs: readonly ValueInfoMsg[];
  outputs: readonly ValueInfoMsg[];
}

/** A model file (ModelProto). */
export interface ModelMsg {
  irVersion: number;
  opsetVersion: number;
  producerName: string;
  producerVersion: string;
  docString?: string;
  metadata?: Readonly<Record<string, string>>;
  graph: GraphMsg;
}

// AttributeProto.AttributeType enum.
const ATTR_TYPE = { float: 1, int: 2, string: 3, tensor: 4, floats: 6, ints: 7 } as const;

/** Encode a TensorProto. */
export function encodeTensor(t: TensorMsg): ProtoWriter {
  return new ProtoWriter()
    .varints(1, t.dims)
    .varint(2, t.dataType)
    .string(8, t.name)
    .bytes(9, t.rawData);
}

/** Encode an AttributeProto. */
export function encodeAttribute(a: AttributeMsg): ProtoWriter {
  const w = new ProtoWriter().string(1, a.name);
  switch (a.kind) {
    case "float":
      w.float(2, a.value);
      break;
    case "int":
      w.varint(3, a.value);
      break;
    case "string":
      w.string(4, a.value);
      break;
    case "tensor":
      w.message(5, encodeTensor(a.value));
      break;
    case "floats":
      w.floats(7, a.value);
      break;
    case "ints":
      w.varints(8, a.value);
      break;
  }
  return w.varint(20, ATTR_TYPE[a.kind]);
}

/** Encode a NodeProto. */
export function encodeNode(n: NodeMsg): ProtoWriter {
  const w = new ProtoWriter().strings(1, n.inputs).strings(2, n.outputs).string(3, n.name)
    .string(4, n.opType);
  for (const a of n.attributes) w.message(5, encodeAttribute(a));
  if (n.domain) w.string(7, n.domain);
  return w;
}

/** Encode a ValueInfoProto for a tensor (TypeProto.tensor_type with a shape). */
export function encodeValueInfo(v: ValueInfoMsg): ProtoWriter {
  const shape = new ProtoWriter();
  for (const d of v.dims) {
    const dim = new ProtoWriter();
    if (typeof d === "number") dim.varint(1, d);
    else dim.string(2, d);
    shape.message(1, dim);
  }
  const tensorType = new ProtoWriter().varint(1, v.elemType).message(2, shape);
  const type = new ProtoWriter().message(1, tensorType);
  return new ProtoWriter().string(1, v.name).message(2, type);
}

/** Encode a GraphProto. */
export function encodeGraph(g: GraphMsg): ProtoWriter {
  const w = new ProtoWriter();
  for (const n of g.nodes) w.message(1, encodeNode(n));
  w.string(2, g.name);
  for (const t of g.initializers) w.message(5, encodeTensor(t));
  for (const v of g.inputs) w.message(11, encodeValueInfo(v));
  for (const v of g.outputs) w.message(12, encodeValueInfo(v));
  return w;
}

/** Encode a ModelProto into the bytes of a `.onnx` file. */
export function encodeModel(m: ModelMsg): Uint8Array {
  const w = new ProtoWriter()
    .varint(1, m.irVersion)
    .string(2, m.producerName)
    .string(3, m.producerVersion);
  if (m.docString) w.string(6, m.docString);
  w.message(7, encodeGraph(m.graph));
  // Default ("ai.onnx") operator set: the empty domain string.
  w.message(8, new ProtoWriter().string(1, "").varint(2, m.opsetVersion));
  for (const [key, value] of Object.entries(m.metadata ?? {})) {
    w.message(14, new ProtoWriter().string(1, key).string(2, value));
  }
  return w.finish();
}
