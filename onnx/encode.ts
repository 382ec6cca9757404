/**
 * ONNX message shapes (a subset of onnx.proto, enough for inference graphs) and their protobuf
 * encoding, with the field numbers of `schema.ts`.
 */
import { ProtoWriter } from "./protobuf.ts";
import {
  AttributeField as ATTR,
  AttributeType,
  type DataTypeCode,
  DimensionField,
  EntryField,
  GraphField,
  ModelField,
  NodeField,
  OpsetField,
  ShapeField,
  TensorField,
  TensorTypeField,
  TypeField,
  ValueInfoField,
} from "./schema.ts";

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

const ATTR_TYPE = {
  float: AttributeType.FLOAT,
  int: AttributeType.INT,
  string: AttributeType.STRING,
  tensor: AttributeType.TENSOR,
  floats: AttributeType.FLOATS,
  ints: AttributeType.INTS,
} as const;

/** Encode a TensorProto. */
export function encodeTensor(t: TensorMsg): ProtoWriter {
  return new ProtoWriter()
    .varints(TensorField.DIMS, t.dims)
    .varint(TensorField.DATA_TYPE, t.dataType)
    .string(TensorField.NAME, t.name)
    .bytes(TensorField.RAW_DATA, t.rawData);
}

/** Encode an AttributeProto. */
export function encodeAttribute(a: AttributeMsg): ProtoWriter {
  const w = new ProtoWriter().string(ATTR.NAME, a.name);
  switch (a.kind) {
    case "float":
      w.float(ATTR.F, a.value);
      break;
    case "int":
      w.varint(ATTR.I, a.value);
      break;
    case "string":
      w.string(ATTR.S, a.value);
      break;
    case "tensor":
      w.message(ATTR.T, encodeTensor(a.value));
      break;
    case "floats":
      w.floats(ATTR.FLOATS, a.value);
      break;
    case "ints":
      w.varints(ATTR.INTS, a.value);
      break;
  }
  return w.varint(ATTR.TYPE, ATTR_TYPE[a.kind]);
}

/** Encode a NodeProto. */
export function encodeNode(n: NodeMsg): ProtoWriter {
  const w = new ProtoWriter()
    .strings(NodeField.INPUT, n.inputs)
    .strings(NodeField.OUTPUT, n.outputs)
    .string(NodeField.NAME, n.name)
    .string(NodeField.OP_TYPE, n.opType);
  for (const a of n.attributes) w.message(NodeField.ATTRIBUTE, encodeAttribute(a));
  if (n.domain) w.string(NodeField.DOMAIN, n.domain);
  return w;
}

/** Encode a ValueInfoProto for a tensor (TypeProto.tensor_type with a shape). */
export function encodeValueInfo(v: ValueInfoMsg): ProtoWriter {
  const shape = new ProtoWriter();
  for (const d of v.dims) {
    const dim = new ProtoWriter();
    if (typeof d === "number") dim.varint(DimensionField.DIM_VALUE, d);
    else dim.string(DimensionField.DIM_PARAM, d);
    shape.message(ShapeField.DIM, dim);
  }
  const tensorType = new ProtoWriter()
    .varint(TensorTypeField.ELEM_TYPE, v.elemType)
    .message(TensorTypeField.SHAPE, shape);
  const type = new ProtoWriter().message(TypeField.TENSOR_TYPE, tensorType);
  return new ProtoWriter().string(ValueInfoField.NAME, v.name).message(ValueInfoField.TYPE, type);
}

/** Encode a GraphProto. */
export function encodeGraph(g: GraphMsg): ProtoWriter {
  const w = new ProtoWriter();
  for (const n of g.nodes) w.message(GraphField.NODE, encodeNode(n));
  w.string(GraphField.NAME, g.name);
  for (const t of g.initializers) w.message(GraphField.INITIALIZER, encodeTensor(t));
  for (const v of g.inputs) w.message(GraphField.INPUT, encodeValueInfo(v));
  for (const v of g.outputs) w.message(GraphField.OUTPUT, encodeValueInfo(v));
  return w;
}

/** Encode a ModelProto into the bytes of a `.onnx` file. */
export function encodeModel(m: ModelMsg): Uint8Array {
  const w = new ProtoWriter()
    .varint(ModelField.IR_VERSION, m.irVersion)
    .string(ModelField.PRODUCER_NAME, m.producerName)
    .string(ModelField.PRODUCER_VERSION, m.producerVersion);
  if (m.docString) w.string(ModelField.DOC_STRING, m.docString);
  w.message(ModelField.GRAPH, encodeGraph(m.graph));
  // Default ("ai.onnx") operator set: the empty domain string.
  const opset = new ProtoWriter()
    .string(OpsetField.DOMAIN, "")
    .varint(OpsetField.VERSION, m.opsetVersion);
  w.message(ModelField.OPSET_IMPORT, opset);
  for (const [key, value] of Object.entries(m.metadata ?? {})) {
    const entry = new ProtoWriter().string(EntryField.KEY, key).string(EntryField.VALUE, value);
    w.message(ModelField.METADATA_PROPS, entry);
  }
  return w.finish();
}
