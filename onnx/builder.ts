/**
 * A small ONNX graph builder: declare inputs and outputs, add named initializers from typed
 * arrays, add nodes, then serialise to `.onnx` bytes (opset 17, IR version 8 by default).
 * Value names are generated deterministically, so the same build steps give the same bytes.
 */
import {
  type AttributeMsg,
  type Dim,
  encodeModel,
  type NodeMsg,
  type TensorMsg,
  type ValueInfoMsg,
} from "./encode.ts";
import { DataType, type DataTypeCode } from "./schema.ts";
import { quantizedMatMulNodes, quantizePerColumn } from "./quantize.ts";

/** Element types the builder accepts for inputs, outputs and initializers. */
export type ElemType = "float32" | "int64" | "int32" | "bool" | "uint8" | "int8";

/** Typed-array data for an initializer (uint8 and bool tensors both use Uint8Array). */
export type TensorData = Float32Array | BigInt64Array | Int32Array | Uint8Array | Int8Array;

/**
 * An attribute value. Plain numbers are INT (they must be integers, which catches a float
 * passed by mistake); number arrays are INTS; use `{ float }`/`{ floats }` for float attributes.
 */
export type AttrValue =
  | number
  | readonly number[]
  | string
  | { float: number }
  | { floats: readonly number[] }
  | { tensor: { data: TensorData; dims: readonly number[]; type?: ElemType } };

/** Node attributes by name. */
export type Attrs = Readonly<Record<string, AttrValue>>;

/** Options of `GraphBuilder.toBytes`. */
export interface ModelOptions {
  /** Default 17. */
  opset?: number;
  /** Default 8. */
  irVersion?: number;
  /** Default "svc-onnx-writer". */
  producerName?: string;
  /** Default "1". */
  producerVersion?: string;
  docString?: string;
  /** ModelProto.metadata_props (string → string). */
  metadata?: Readonly<Record<string, string>>;
}

const ELEM: Record<ElemType, DataTypeCode> = {
  float32: DataType.FLOAT,
  int64: DataType.INT64,
  int32: DataType.INT32,
  bool: DataType.BOOL,
  uint8: DataType.UINT8,
  int8: DataType.INT8,
};

/** Builds one ONNX graph; every method returns value names usable as node inputs. */
export class GraphBuilder {
  readonly name: string;
  #nodes: NodeMsg[] = [];
  #initializers: TensorMsg[] = [];
  /** Float initializers' data by name (what weight quantisation reads). */
  #floats = new Map<string, { data: Float32Array; dims: readonly number[] }>();
  #inputs: ValueInfoMsg[] = [];
  #outputs: ValueInfoMsg[] = [];
  #names = new Set<string>();
  #constCache = new Map<string, string>();
  #counter = 0;
  /** Module scope of the nodes being added (`withScope`), as the PyTorch exporter names them. */
  #scope: string[] = [];
  #nodeNames = new Set<string>();

  /** Start an empty graph called `name`. */
  constructor(name = "main") {
    this.name = name;
  }

  /** Declare a graph input, e.g. `input("input_ids", "int64", ["batch", "seq"])`. */
  input(name: string, type: ElemType, dims: readonly Dim[]): string {
    this.#claim(name);
    this.#inputs.push({ name, elemType: ELEM[type], dims: [...dims] });
    return name;
  }

  /** Declare a graph output; `name` must be produced by a node (see `op`'s `output`). */
  output(name: string, type: ElemType, dims: readonly Dim[]): void {
    this.#outputs.push({ name, elemType: ELEM[type], dims: [...dims] });
  }

  /**
   * Add a named constant tensor (weights); the data is referenced, not copied. The element type
   * follows the array type; pass `type: "bool"` for a Uint8Array of 0/1 meant as booleans.
   */
  initializer(name: string, data: TensorData, dims: readonly number[], type?: ElemType): string {
    const count = dims.reduce((a, b) => a * b, 1);
    if (count !== data.length) {
      throw new RangeError(`initializer ${name}: ${data.length} values for dims [${dims}]`);
    }
    this.#claim(name);
    this.#initializers.push(tensorMsg(name, data, dims, type));
    if (data instanceof Float32Array) this.#floats.set(name, { data, dims });
    return name;
  }

  /**
   * Dynamic int8 quantisation (quantize.ts): every MatMul whose second input is a 2-D float
   * initializer becomes DynamicQuantizeLinear → MatMulInteger → Cast → Mul with per-column int8
   * weights; a float weight no other node reads is dropped. Call after the graph is complete.
   * Returns how many MatMuls were quantised.
   */
  quantizeMatMulWeights(): number {
    const uses = new Map<string, number>();
    for (const n of this.#nodes) for (const i of n.inputs) uses.set(i, (uses.get(i) ?? 0) + 1);
    const replaced = new Map<string, number>();
    const nodes: NodeMsg[] = [];
    for (const n of this.#nodes) {
      const w = n.opType === "MatMul" ? this.#floats.get(n.inputs[1]) : undefined;
      if (!w || w.dims.length !== 2) {
        nodes.push(n);
        continue;
      }
      const [k, cols] = w.dims;
      const { q, scale } = quantizePerColumn(w.data, k, cols);
      const base = `${n.inputs[1]}_quantized`;
      const weight = this.initializer(this.#fresh(base), q, [k, cols]);
      const zeroPoint = this.initializer(this.#fresh(`${base}_zero_point`), new Int8Array(cols), [
        cols,
      ]);
      const scaleName = this.initializer(this.#fresh(`${base}_scale`), scale, [cols]);
      const added = quantizedMatMulNodes({
        x: n.inputs[0],
        output: n.outputs[0],
        weight,
        zeroPoint,
        scale: scaleName,
        prefix: n.name,
      });
      for (const a of added) for (const o of a.outputs) if (o !== n.outputs[0]) this.#claim(o);
      nodes.push(...added);
      replaced.set(n.inputs[1], (replaced.get(n.inputs[1]) ?? 0) + 1);
    }
    this.#nodes = nodes;
    const unused = new Set(
      [...replaced].filter(([name, k]) => uses.get(name) === k).map(([n]) => n),
    );
    this.#initializers = this.#initializers.filter((t) => !unused.has(t.name));
    for (const name of unused) this.#floats.delete(name);
    return [...replaced.values()].reduce((a, b) => a + b, 0);
  }

  /** A small int64 constant (shapes, axes, indices); equal constants share one initializer. */
  constInt64(values: readonly number[], dims: readonly number[] = [values.length]): string {
    return this.#const("i64", values, dims, () => BigInt64Array.from(values, (v) => BigInt(v)));
  }

  /** A small float32 constant; equal constants share one initializer. */
  constFloat(values: readonly number[], dims: readonly number[] = [values.length]): string {
    return this.#const("f32", values, dims, () => Float32Array.from(values));
  }

  /** Add a node with explicit output names. */
  node(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[],
    attrs: Attrs = {},
  ): void {
    for (const o of outputs) this.#claim(o);
    this.#nodes.push({
      name: this.#nodeName(opType),
      opType,
      inputs: [...inputs],
      outputs: [...outputs],
      attributes: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
  }

  /** Add a single-output node and return its output name (`output` names it, e.g. a graph output). */
  op(opType: string, inputs: readonly string[], attrs: Attrs = {}, output?: string): string {
    const out = output ?? this.#fresh(opType);
    this.node(opType, inputs, [out], attrs);
    return out;
  }

  /**
   * Run `fn` with nodes named after a module scope, the way the PyTorch exporter names them:
   * `withScope(["encoder", "layer.0", "attention", "self", "query"], ...)` names a MatMul
   * `/encoder/layer.0/attention/self/query/MatMul` (then `MatMul_1`...). Scopes nest.
   */
  withScope<T>(scope: readonly string[], fn: () => T): T {
    const outer = this.#scope;
    this.#scope = [...outer, ...scope];
    try {
      return fn();
    } finally {
      this.#scope = outer;
    }
  }

  /** A fresh value name with `prefix`, e.g. `onnx::MatMul_12` like the exporter's folded weights. */
  freshName(prefix: string): string {
    return this.#fresh(prefix);
  }

  /** Serialise the graph into the bytes of a `.onnx` file. */
  toBytes(options: ModelOptions = {}): Uint8Array {
    for (const o of this.#outputs) {
      if (!this.#names.has(o.name)) throw new Error(`graph output ${o.name} is never produced`);
    }
    return encodeModel({
      irVersion: options.irVersion ?? 8,
      opsetVersion: options.opset ?? 17,
      producerName: options.producerName ?? "svc-onnx-writer",
      producerVersion: options.producerVersion ?? "1",
      docString: options.docString,
      metadata: options.metadata,
      graph: {
        name: this.name,
        nodes: this.#nodes,
        initializers: this.#initializers,
        inputs: this.#inputs,
        outputs: this.#outputs,
      },
    });
  }

  #const(
    kind: string,
    values: readonly number[],
    dims: readonly number[],
    make: () => TensorData,
  ): string {
    const key = `${kind}[${dims}]:${values}`;
    const known = this.#constCache.get(key);
    if (known) return known;
    const name = this.initializer(this.#fresh(`const_${kind}`), make(), dims);
    this.#constCache.set(key, name);
    return name;
  }

  #nodeName(opType: string): string {
    if (this.#scope.length === 0) return `${opType}_${this.#nodes.length}`;
    const base = `/${this.#scope.join("/")}/${opType}`;
    let name = base;
    for (let k = 1; this.#nodeNames.has(name); k++) name = `${base}_${k}`;
    this.#nodeNames.add(name);
    return name;
  }

  #fresh(prefix: string): string {
    let name: string;
    do name = `${prefix}_${this.#counter++}`; while (this.#names.has(name));
    return name;
  }

  #claim(name: string): void {
    if (name === "") throw new Error("value names must not be empty");
    if (this.#names.has(name)) throw new Error(`value ${name} is defined twice`);
    this.#names.add(name);
  }
}

function tensorMsg(
  name: string,
  data: TensorData,
  dims: readonly number[],
  type?: ElemType,
): TensorMsg {
  const natural: ElemType = data instanceof Float32Array
    ? "float32"
    : data instanceof BigInt64Array
    ? "int64"
    : data instanceof Int32Array
    ? "int32"
    : data instanceof Int8Array
    ? "int8"
    : "uint8";
  const chosen = type ?? natural;
  if (chosen !== natural && !(chosen === "bool" && natural === "uint8")) {
    throw new TypeError(`tensor ${name}: ${data.constructor.name} cannot hold ${chosen}`);
  }
  return { name, dataType: ELEM[chosen], dims: [...dims], rawData: littleEndianBytes(data) };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// raw_data is little-endian by specification; typed arrays use the host order, so swap on
// big-endian hosts (none we run on, but silent corruption would be worse than a copy).
function littleEndianBytes(data: TensorData): Uint8Array {
  const view = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (LITTLE_ENDIAN || data.BYTES_PER_ELEMENT === 1) return view;
  const out = new Uint8Array(view.length);
  const size = data.BYTES_PER_ELEMENT;
  for (let i = 0; i < view.length; i += size) {
    for (let j = 0; j < size; j++) out[i + j] = view[i + size - 1 - j];
  }
  return out;
}

function attribute(name: string, v: AttrValue): AttributeMsg {
  if (typeof v === "number") {
    if (!Number.isInteger(v)) throw new Error(`attribute ${name}: ${v} is not an int; use {float}`);
    return { name, kind: "int", value: v };
  }
  if (typeof v === "string") return { name, kind: "string", value: v };
  if (isNumberArray(v)) {
    if (!v.every(Number.isInteger)) throw new Error(`attribute ${name}: ints must be integers`);
    return { name, kind: "ints", value: [...v] };
  }
  if ("float" in v) return { name, kind: "float", value: v.float };
  if ("floats" in v) return { name, kind: "floats", value: [...v.floats] };
  return {
    name,
    kind: "tensor",
    value: tensorMsg(name, v.tensor.data, v.tensor.dims, v.tensor.type),
  };
}

function isNumberArray(v: AttrValue): v is readonly number[] {
  return Array.isArray(v);
}
