/**
 * The linear layers of an ONNX graph that a LoRA adapter can target, by PyTorch module path.
 *
 * Exported graphs name MatMul weights anonymously (`onnx::MatMul_123`: the exporter folded the
 * transpose of a Linear weight into a new constant) while node names keep the module scope
 * (`/encoder/layer.0/attention/self/query/MatMul`). So a weight's module comes from the node that
 * consumes it; a weight that kept its parameter name (`encoder.layer.0.attention.self.query.weight`)
 * names the module itself when the node name does not. The layout follows the operator: a MatMul
 * operand is `[in, out]`; Gemm's is `[out, in]` (PyTorch's Linear layout) when `transB = 1`; a
 * weight reaching a MatMul through a 2-D Transpose is stored `[out, in]`.
 */
import {
  dataTypeName,
  floatTypeOf,
  type InitializerRef,
  type NodeRef,
  type OnnxIndex,
} from "@svc/onnx";

/** One weight of a linear layer in the graph. */
export interface LinearTarget {
  /** Module path, dotted like PyTorch's (`encoder.layer.0.attention.self.query`). */
  module: string;
  /** The consuming node (for messages). */
  node: string;
  opType: string;
  initializer: string;
  /** How the initializer is stored: `in_out` (MatMul operand) or `out_in` (PyTorch Linear). */
  layout: "in_out" | "out_in";
  inFeatures: number;
  outFeatures: number;
  /** `float32`, `float16`, `bfloat16`, or another type name (then it cannot be patched). */
  dataType: string;
  /** The values live in an external data file (cannot be patched in memory). */
  external: boolean;
}

/** Every linear-layer weight of the graph whose module path is known. */
export function linearTargets(index: OnnxIndex): LinearTarget[] {
  const producers = new Map<string, NodeRef>();
  for (const n of index.nodes) for (const o of n.outputs) producers.set(o, n);
  const out: LinearTarget[] = [];
  for (const node of index.nodes) {
    if (node.domain !== "" && node.domain !== "ai.onnx") continue;
    const found = weightOperand(index, producers, node);
    if (!found) continue;
    const { init, layout } = found;
    const module = nodeModulePath(node.name) ?? parameterModulePath(init.name);
    if (!module) continue;
    const [d0, d1] = init.dims;
    out.push({
      module,
      node: node.name,
      opType: node.opType,
      initializer: init.name,
      layout,
      inFeatures: layout === "in_out" ? d0 : d1,
      outFeatures: layout === "in_out" ? d1 : d0,
      dataType: floatTypeOf(init) ?? dataTypeName(init.dataType),
      external: init.data.kind === "external",
    });
  }
  return out;
}

/** The 2-D initializer a MatMul/Gemm node multiplies by, and how it is laid out. */
function weightOperand(
  index: OnnxIndex,
  producers: Map<string, NodeRef>,
  node: NodeRef,
): { init: InitializerRef; layout: "in_out" | "out_in" } | undefined {
  if (node.opType !== "MatMul" && node.opType !== "Gemm") return undefined;
  const operand = node.inputs[1];
  if (operand === undefined) return undefined;
  let init = matrix(index, operand);
  let transposed = node.opType === "Gemm" && node.ints.transB === 1;
  if (!init) {
    // A weight kept in PyTorch's layout and transposed in the graph.
    const t = producers.get(operand);
    if (t?.opType !== "Transpose" || !isMatrixTranspose(t)) return undefined;
    init = matrix(index, t.inputs[0]);
    transposed = !transposed;
  }
  if (!init) return undefined;
  return { init, layout: transposed ? "out_in" : "in_out" };
}

function matrix(index: OnnxIndex, name: string): InitializerRef | undefined {
  const init = index.initializers.get(name);
  return init && init.dims.length === 2 ? init : undefined;
}

/** A Transpose that swaps the two axes of a matrix (no `perm` means reverse all axes). */
function isMatrixTranspose(n: NodeRef): boolean {
  const perm = n.intLists.perm;
  return perm === undefined || (perm.length === 2 && perm[0] === 1 && perm[1] === 0);
}

/**
 * `/encoder/layer.0/attention/self/query/MatMul` → `encoder.layer.0.attention.self.query`; names
 * that are not scoped paths (`MatMul_12`) give undefined.
 */
export function nodeModulePath(name: string): string | undefined {
  if (!name.startsWith("/")) return undefined;
  const scopes = name.slice(1).split("/");
  scopes.pop();
  if (scopes.length === 0 || scopes.some((s) => s === "")) return undefined;
  return scopes.join(".");
}

/** `encoder.layer.0.output.dense.weight` → `encoder.layer.0.output.dense`; else undefined. */
export function parameterModulePath(name: string): string | undefined {
  if (!name.endsWith(".weight") || name.startsWith("onnx::")) return undefined;
  const module = name.slice(0, -".weight".length);
  return /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/.test(module) ? module : undefined;
}
