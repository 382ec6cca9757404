/**
 * `@svc/fixture-models/lora`: deterministic PEFT-style LoRA adapters for `fixture/dense`
 * (`adapter_config.json` and `adapter_model.safetensors`), broken variants, the merged weights a
 * reference runs with, and the small safetensors writer they are written with.
 */
export {
  type AdapterSpec,
  DENSE_QV_SPEC,
  denseAdapter,
  LAYER_MODULES,
  type LayerModule,
  type LoraFixture,
  mergedWeights,
  writeAdapter,
} from "./dense_adapter.ts";
export { writeSafetensors } from "./safetensors_writer.ts";
