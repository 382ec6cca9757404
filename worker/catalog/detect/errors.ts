/**
 * Why a repository's files do not say how to serve it: one error naming the file and the field
 * that is missing or not understood, and how to say it explicitly instead. It is an incompatible
 * model (a permanent load failure: the same files give the same answer).
 */
import { IncompatibleModelError } from "../../registry/runner.ts";

/** The file next to the weights that may set what detection cannot (descriptor fields). */
export const OVERRIDE_FILE = "svc_model.json";

/** The `file` of a DetectionError about the repository as a whole (which files it holds). */
export const REPOSITORY = "(repository)";

/** A setting the files did not settle. */
export class DetectionError extends IncompatibleModelError {
  constructor(
    /** The repository file at fault (`config.json`), or {@link REPOSITORY}. */
    readonly file: string,
    /** The field at fault (`architectures`), when one is. */
    readonly field: string | undefined,
    problem: string,
    fix: string,
  ) {
    super(
      file === REPOSITORY
        ? `the repository ${problem}. ${fix}`
        : `${file}${field ? ` ${field}` : ""}: ${problem}. ${fix}`,
    );
    this.name = "DetectionError";
  }
}

/**
 * How to give `key` explicitly: as an `SVC_MODELS` entry setting when it is one, else in the
 * override file (both when it is one).
 */
export function sayIt(key: string, example: string, entrySetting = true): string {
  const json = `{"${key}": ${example}}`;
  const plain = example.replace(/^"|"$/g, "");
  return entrySetting
    ? `Say it explicitly: add ";${key}=${plain}" to the model's SVC_MODELS entry, or put ` +
      `${json} in ${OVERRIDE_FILE} next to the weights`
    : `Say it explicitly: put ${json} in ${OVERRIDE_FILE} next to the weights`;
}
