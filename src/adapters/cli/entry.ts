// The CLI's process entry (bin/longbuild.js loads its bundle, dist/cli/longbuild.mjs). It imports
// the rest dynamically so that the bundle's entry chunk holds this file alone: a worker thread that
// loads a chunk of shared code (the audit's graph check) must never load, and so run, this.
const { runCli } = await import('./run-cli.js').catch((err: unknown) => {
  // A package whose files are not where they belong (an incomplete copy of dist/): one line, no stack.
  process.stderr.write(`longbuild: ${err instanceof Error ? err.message : String(err)} (reinstall the package, or run \`npm run build\` in a checkout)\n`);
  process.exit(1);
});

runCli(process.argv.slice(2));
