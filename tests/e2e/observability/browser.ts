/**
 * Headless Chromium for the dashboard test: Debian's `chromium` driven by `playwright-core`
 * (never a downloaded browser). Both are optional at load time: when either is missing the
 * caller skips with the reason from {@link browserUnavailable}.
 */

/** Where Debian installs Chromium. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** Flags for a quiet, offline, sandbox-less headless run (containers, CI). */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The part of a Playwright page the tests use. */
export interface Page {
  goto(url: string, opts?: { waitUntil?: "load" | "domcontentloaded" }): Promise<unknown>;
  /** `fn` runs in the page (functions, not strings: the pages' CSP forbids eval). */
  waitForFunction<A>(
    fn: (arg: A) => boolean,
    arg: A,
    opts?: { timeout?: number; polling?: number },
  ): Promise<unknown>;
  evaluate<T>(fn: () => T): Promise<T>;
  textContent(selector: string): Promise<string | null>;
  getAttribute(selector: string, name: string): Promise<string | null>;
  fill(selector: string, value: string): Promise<void>;
  click(selector: string): Promise<void>;
  reload(): Promise<unknown>;
  on(event: "request", fn: (req: { url(): string }) => void): void;
  on(event: "console", fn: (msg: { type(): string; text(): string }) => void): void;
  on(event: "pageerror", fn: (err: Error) => void): void;
  on(event: "websocket", fn: (ws: { url(): string }) => void): void;
}

/** The part of a Playwright browser the tests use. */
export interface Browser {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

interface PlaywrightModule {
  chromium: {
    launch(opts: { executablePath: string; headless: boolean; args: string[] }): Promise<Browser>;
  };
}

/** Flag that makes playwright-core's bundled `is-wsl` skip its probe at import time. */
const SKIP_WSL_PROBE = "__IS_WSL_TEST__";

let loaded: Promise<PlaywrightModule | undefined> | undefined;

/**
 * Import playwright-core if installed (a variable specifier keeps type checks independent of
 * it). At import, its bundled `is-wsl` reads /proc/sys/fs/binfmt_misc/WSLInterop, which Deno
 * only allows with --allow-all; the package's own test flag defers that probe. The probe only
 * serves "open a URL in the desktop browser", which launching Chromium never uses. The flag is
 * removed right after, so spawned processes never see it.
 */
function loadPlaywright(): Promise<PlaywrightModule | undefined> {
  loaded ??= (async () => {
    const specifier = "playwright-core";
    Deno.env.set(SKIP_WSL_PROBE, "1");
    try {
      return (await import(specifier)) as PlaywrightModule;
    } catch {
      return undefined;
    } finally {
      Deno.env.delete(SKIP_WSL_PROBE);
    }
  })();
  return loaded;
}

/** Why the browser test cannot run here, or undefined when it can. */
export async function browserUnavailable(): Promise<string | undefined> {
  try {
    await Deno.stat(CHROMIUM_PATH);
  } catch {
    return `${CHROMIUM_PATH} is missing (install Debian's package: apt-get install -y chromium)`;
  }
  if (!(await loadPlaywright())) {
    return "playwright-core is not installed (it is a devDependency: run npm ci)";
  }
  return undefined;
}

/** Launch headless Chromium. */
export async function launchBrowser(): Promise<Browser> {
  const pw = await loadPlaywright();
  if (!pw) throw new Error("playwright-core is not installed");
  return await pw.chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
  });
}
