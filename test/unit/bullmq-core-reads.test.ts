/**
 * The BullMQ backend reads jobs by state through core's reads (counts,
 * pages of ids) and builds its records through core's buildRecords: none of
 * its files takes a job pointer's name parser or a record builder from core.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'bullmq', 'src');

/** What reads job pointers' names, or builds a record, in core: the backend asks core instead. */
const CORE_ONLY = [
  'numberOf',
  'idOfPointer',
  'idOfDelayed',
  'dueOfDelayed',
  'pad10',
  'shardOf',
  'sortBySequence',
  'sortLanes',
  'delayedHours',
  'newRecord',
];

/** The names a file imports from `@zkq/core`. */
function coreImports(source: string): string[] {
  const names: string[] = [];
  for (const m of source.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'@zkq\/core[^']*'/g)) {
    for (const part of (m[1] as string).split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)[0];
      if (name) names.push(name);
    }
  }
  return names;
}

test('no file of the BullMQ backend takes a job pointer name parser or a record builder from core', () => {
  const found: string[] = [];
  for (const file of readdirSync(SRC).filter((f) => f.endsWith('.ts'))) {
    for (const name of coreImports(readFileSync(join(SRC, file), 'utf8'))) {
      if (CORE_ONLY.includes(name)) found.push(`${file}: ${name}`);
    }
  }
  assert.deepEqual(found, []);
});
