/**
 * The part of onnx/onnx.proto this package reads and writes: field numbers of each message and the
 * TensorProto data types. Reader and writer both take them from here.
 */

/** ModelProto fields. */
export const ModelField = {
  IR_VERSION: 1,
  PRODUCER_NAME: 2,
  PRODUCER_VERSION: 3,
  DOC_STRING: 6,
  GRAPH: 7,
  OPSET_IMPORT: 8,
  METADATA_PROPS: 14,
} as const;

/** OperatorSetIdProto fields. */
export const OpsetField = { DOMAIN: 1, VERSION: 2 } as const;

/** StringStringEntryProto fields (metadata_props). */
export const EntryField = { KEY: 1, VALUE: 2 } as const;

/** GraphProto fields. */
export const GraphField = { NODE: 1, NAME: 2, INITIALIZER: 5, INPUT: 11, OUTPUT: 12 } as const;

/** NodeProto fields. */
export const NodeField = {
  INPUT: 1,
  OUTPUT: 2,
  NAME: 3,
  OP_TYPE: 4,
  ATTRIBUTE: 5,
  DOMAIN: 7,
} as const;

/** AttributeProto fields. */
export const AttributeField = {
  NAME: 1,
  F: 2,
  I: 3,
  S: 4,
  T: 5,
  FLOATS: 7,
  INTS: 8,
  TYPE: 20,
} as const;

/** AttributeProto.AttributeType values. */
export const AttributeType = {
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  FLOATS: 6,
  INTS: 7,
} as const;

/** TensorProto fields. */
export const TensorField = {
  DIMS: 1,
  DATA_TYPE: 2,
  FLOAT_DATA: 4,
  INT32_DATA: 5,
  STRING_DATA: 6,
  INT64_DATA: 7,
  NAME: 8,
  RAW_DATA: 9,
  DOUBLE_DATA: 10,
  UINT64_DATA: 11,
  EXTERNAL_DATA: 13,
  DATA_LOCATION: 14,
} as const;

/** TensorProto.DataLocation.EXTERNAL. */
export const LOCATION_EXTERNAL = 1;

/** ValueInfoProto fields. */
export const ValueInfoField = { NAME: 1, TYPE: 2 } as const;

/** TypeProto fields. */
export const TypeField = { TENSOR_TYPE: 1 } as const;

/** TypeProto.Tensor fields. */
export const TensorTypeField = { ELEM_TYPE: 1, SHAPE: 2 } as const;

/** TensorShapeProto fields. */
export const ShapeField = { DIM: 1 } as const;

/** TensorShapeProto.Dimension fields. */
export const DimensionField = { DIM_VALUE: 1, DIM_PARAM: 2 } as const;

/** TensorProto.DataType values this package writes or reads. */
export const DataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  BFLOAT16: 16,
} as const;
/** A TensorProto.DataType value. */
export type DataTypeCode = typeof DataType[keyof typeof DataType];

const TYPE_NAMES: Record<number, string> = {
  1: "float32",
  2: "uint8",
  3: "int8",
  4: "uint16",
  5: "int16",
  6: "int32",
  7: "int64",
  8: "string",
  9: "bool",
  10: "float16",
  11: "float64",
  12: "uint32",
  13: "uint64",
  16: "bfloat16",
};

/** A readable name of a TensorProto data type (`float32`, `int8`...). */
export function dataTypeName(code: number): string {
  return TYPE_NAMES[code] ?? `type ${code}`;
}
