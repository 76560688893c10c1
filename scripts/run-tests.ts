/**
 * The test suite's entry: starts one ZooKeeper (installing it when missing)
 * for the whole run, hands its address to every test file through
 * ZKQ_TEST_ZK, runs node's test runner, and stops the server.
 *
 *   npm test                      every test
 *   npm test -- test/unit         only files under a folder (or single files)
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SHARED_SERVER_ENV, startZooKeeper } from '@zkq/testing';

function testFiles(target: string): string[] {
  if (statSync(target).isFile()) return [target];
  return readdirSync(target, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(target, f))
    .sort();
}

const targets = process.argv.slice(2);
const files = (targets.length ? targets : ['test']).flatMap(testFiles);
const server = await startZooKeeper();
console.log(`zookeeper for this run: ${server.connectionString}`);
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--conditions=zkq-source',
    '--test',
    '--test-reporter=spec',
    `--test-concurrency=${process.env.ZKQ_TEST_CONCURRENCY ?? 2}`,
    '--test-timeout=300000',
    ...files,
  ],
  { stdio: 'inherit', env: { ...process.env, [SHARED_SERVER_ENV]: server.connectionString } },
);
await server.stop();
process.exit(result.status ?? 1);
