/**
 * The fault soak, short: 45 s of load and faults against a ZooKeeper of its
 * own, then the history check (docs/soak.md). Fails on any violation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSoak } from './run.js';

/** Bounds on speed (extras-checker.ts): printed, but a busy machine alone can pass them, so they fail no test. */
const SPEED_BOUNDS = new Set(['late-promotion', 'scheduler-gap']);

test('fault soak: no job lost or finished twice, results fenced, FIFO per priority, flows released once', {
  timeout: 150_000,
}, async () => {
  const seed = Number(process.env.ZKQ_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const { report, text, dir } = await runSoak({
    seconds: 45,
    drainSeconds: 15,
    seed,
    jobsPerSecond: 25,
    flowsPerSecond: 1,
    fifoJobs: 100,
    print: (line) => console.log(line),
  });
  const violations = report.violations.filter((v) => !SPEED_BOUNDS.has(v.kind));
  assert.equal(violations.length, 0, `the soak found violations (seed ${seed}, logs in ${dir}):\n${text}`);
});
