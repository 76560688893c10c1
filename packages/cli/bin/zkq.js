#!/usr/bin/env node
// The `zkq` command. This file is committed (the compiled CLI is not), so
// `npm ci` links it as node_modules/.bin/zkq even before the first build,
// and `npx zkq` runs this project's CLI, never a registry package of that name.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('../dist/bin.js', import.meta.url);
if (!existsSync(built)) {
  const root = fileURLToPath(new URL('../../..', import.meta.url)).replace(/\/$/, '');
  process.stderr.write(`zkq: the CLI is not built yet: run 'npm run build' in ${root}\n`);
  process.exit(1);
}
await import(built.href);
