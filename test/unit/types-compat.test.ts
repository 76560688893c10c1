/**
 * BullMQ compatibility at the type level: the app in test/types compiles
 * against BullMQ's declarations and against zkq's, and checks.ts (zkq's
 * option, state and listener types next to BullMQ's) holds. Same as
 * `npm run typecheck:compat`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');

function typecheck(project: string): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [tsc, '-p', join(root, project), '--noEmit', '--pretty', 'false'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ?? ''}` };
}

for (const target of ['bullmq', 'zkq']) {
  test(`types: the BullMQ-style app type-checks against ${target}`, { timeout: 300_000 }, () => {
    const { status, output } = typecheck(`test/types/tsconfig.${target}.json`);
    assert.equal(status, 0, `tsc -p test/types/tsconfig.${target}.json failed:\n${output}`);
  });
}
