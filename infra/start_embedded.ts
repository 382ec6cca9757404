/**
 * `deno task start` (and `npm start`): the whole service on one machine, router and one local
 * worker in one process (infra/start_stack.ts). This entry point says so before it loads the
 * service's code, which takes seconds (8 s of silence measured on a cold cache and 2 cores):
 * the first line comes within a second of the command. `--help` prints only the help.
 */
if (import.meta.main) {
  if (Deno.args.length === 0) console.log("start: loading the router and worker …");
  const { main } = await import("./start_stack.ts");
  await main();
}
