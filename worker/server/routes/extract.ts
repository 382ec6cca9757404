/** POST /v1/extract/{model}: named entities from token classification and GLiNER models. */
import type { Context } from "hono";
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import {
  type ExtractParams,
  ExtractRequestSchema,
  type ExtractResult,
} from "@svc/shared/schemas/extract";
import type { WorkItem, WorkParams } from "../../families/types.ts";
import { checkLora, effectiveOptions } from "../../service/params.ts";
import type { WorkerContext } from "../context.ts";
import { answerModelRequest, openModelRequest, runOnModel } from "../model_request.ts";

/**
 * Most labels one request may name. GLiNER reads every label as a prompt before each window
 * of text, so the prompt must leave room for the text inside the model's token limit; real
 * GLiNER models are trained with a few dozen labels at most.
 */
export const MAX_LABELS = 64;

/** Longest label, in characters: an entity type is a short name ("person", "drug dosage"). */
export const MAX_LABEL_LENGTH = 100;

/** Build the batch parameters of an extract request; throws INVALID_INPUT on bad params. */
export function planExtract(served: ServedModel, p: ExtractParams): WorkParams {
  const { options } = effectiveOptions(served, p.options);
  checkLora(served.config, options);
  const threshold = options.threshold;
  if (
    threshold !== undefined &&
    (typeof threshold !== "number" || !Number.isFinite(threshold) || threshold < 0 ||
      threshold > 1)
  ) {
    throw invalidInput("options.threshold must be a number from 0 to 1");
  }
  const labels = checkLabels(p.labels);
  if (served.config.family === "gliner" && labels === undefined) {
    throw invalidInput(
      `model '${served.config.id}' finds the entity types it is given: ` +
        `params.labels must list at least one (e.g. ["person", "organization"])`,
    );
  }
  return { op: "extract", labels, threshold: threshold as number | undefined };
}

/** Validate labels (count, non-empty, length) and drop repeats; undefined when none. */
function checkLabels(labels: string[] | undefined): string[] | undefined {
  if (labels === undefined || labels.length === 0) return undefined;
  if (labels.length > MAX_LABELS) {
    throw invalidInput(`params.labels has ${labels.length} labels; at most ${MAX_LABELS}`);
  }
  labels.forEach((l, i) => {
    if (l.trim().length === 0) throw invalidInput(`params.labels[${i}] is empty`);
    if (l.length > MAX_LABEL_LENGTH) {
      throw invalidInput(`params.labels[${i}] is longer than ${MAX_LABEL_LENGTH} characters`);
    }
  });
  return [...new Set(labels)];
}

/** Handle one extract request end to end. */
export async function handleExtract(ctx: WorkerContext, c: Context): Promise<Response> {
  const mr = await openModelRequest(ctx, c, "extract", ExtractRequestSchema);
  const { served, body } = mr;
  const work: WorkItem[] = body.items.map((it, i) => {
    if (it.text === undefined) {
      throw invalidInput(`items[${i}] has no text; model '${served.config.id}' reads text`);
    }
    return { text: it.text };
  });
  const params = planExtract(served, body.params);
  const result = await runOnModel(ctx, served, mr.req.signal, work, params);
  const items = result.outputs.map((out, i): ExtractResult => {
    const entities = out.entities ?? [];
    const id = body.items[i].id;
    return id === undefined ? { entities } : { id, entities };
  });
  return answerModelRequest(c, mr, result, { items });
}
