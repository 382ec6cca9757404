/**
 * Detecting a CLIP model: the text and vision towers as two graphs, the embedding width, and the
 * image settings.
 */
import { clipImages } from "./images.ts";
import type { ModelConfigInput } from "@svc/shared/catalog/schema";
import { type Ctx, imageSettings, localSignature, noOnnx } from "../../catalog/detect/context.ts";
import { DetectionError, OVERRIDE_FILE, REPOSITORY, sayIt } from "../../catalog/detect/errors.ts";
import { type GraphChoice, singleGraph, splitGraphs } from "../../catalog/detect/onnx_files.ts";

/** The two towers' graphs; one combined graph is refused with how to export them apart. */
export function clipGraphs(ctx: Ctx): GraphChoice {
  const split = splitGraphs(ctx.view.files);
  if (split) return split;
  if (singleGraph(ctx.view.files)) {
    throw new DetectionError(
      REPOSITORY,
      undefined,
      "holds one combined CLIP graph; the clip family runs the text and vision towers as two " +
        "graphs (onnx/text_model.onnx and onnx/vision_model.onnx, as transformers.js exports)",
      `Export the towers separately, or set {"files": {"model": …, "vision_model": …}} in ` +
        `${OVERRIDE_FILE}`,
    );
  }
  throw noOnnx(ctx);
}

/** Width, normalisation and image settings. */
export async function configureClip(
  ctx: Ctx,
  graphs: GraphChoice,
  out: ModelConfigInput,
): Promise<void> {
  const { rec, config } = ctx;
  const fo = out.family_options!;
  const proj = config?.projection_dim;
  const given = rec.given<Record<string, number>>("dims");
  if (given) out.dims = given;
  else if (typeof proj === "number") {
    out.dims = rec.set("dims", { dense: proj }, "config.json projection_dim");
  } else {
    const sig = await localSignature(ctx, graphs.files.model);
    const emb = sig?.outputs.find((o) => o.name === "text_embeds");
    if (typeof emb?.dims[1] !== "number") {
      throw new DetectionError(
        "config.json",
        "projection_dim",
        "is missing, so the embedding width is unknown",
        sayIt("dims", '{"dense": 512}', false),
      );
    }
    out.dims = rec.set(
      "dims",
      { dense: emb.dims[1] },
      `${graphs.files.model} output text_embeds`,
    );
  }
  out.normalize = rec.set(
    "normalize",
    true,
    "clip family (text and image vectors are L2-normalised)",
  );
  Object.assign(fo, imageSettings(ctx, clipImages));
}
