/**
 * The bench's targets and report, from figures made up here (no server): each goal passes at its
 * bound and misses beyond it (ratios are kept to three decimals), zkq is compared with BullMQ on both Redis systems, the
 * ensemble with the standalone drain, and the backlog's drain with BullMQ's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { render } from '../../bench/report.js';
import type { Metrics } from '../../bench/scenarios.js';
import { GOALS, type Target, targets, withRatios } from '../../bench/targets.js';

const options = { jobs: 20_000, concurrency: 50, addInFlight: 1000, herdWorkers: 100 };

/** A run where zkq drains at 10,000 jobs/s, and the other figures are set from it by `over`. */
function run(over: Metrics = {}): Metrics {
  return {
    'zkq.drain.rate': 10_000,
    'bullmq.drain.rate': 10_000,
    'bullmq-fsync.drain.rate': 5_000,
    'zkq.e2e.rate': 8_000,
    'bullmq.e2e.rate': 8_000,
    'bullmq-fsync.e2e.rate': 4_000,
    'zkq.addBulk.rate': 30_000,
    'bullmq.addBulk.rate': 20_000,
    'bullmq-fsync.addBulk.rate': 10_000,
    'zkq.add.rate': 20_000,
    'bullmq.add.rate': 20_000,
    'bullmq-fsync.add.rate': 8_000,
    'zkq.threads.rate': 8_500,
    'zkq.retention.rate': 9_000,
    'zkq.ensemble.rate': 6_000,
    'zkq.idle.p50': 1.5,
    'bullmq.idle.p50': 0.7,
    'bullmq-fsync.idle.p50': 0.9,
    'zkq.idle.p99': 5,
    'zkq.drain.workerCpuUs': 120,
    'zkq.drain.serverCpuUs': 120,
    'zkq.herd.idlePerSec': 49.9,
    'zkq.herd.perJob': 30,
    ...over,
  };
}

function row(rows: Target[], name: string | RegExp): Target {
  const found = rows.find((t) => (typeof name === 'string' ? t.name.startsWith(name) : name.test(t.name)));
  assert.ok(found, `no target ${name}`);
  return found;
}

const check = (m: Metrics, name: string | RegExp) => row(targets(withRatios(m), options), name);

test('targets: the goals the next layout is judged by', () => {
  assert.deepEqual(
    { ...GOALS },
    {
      drain: 1.0,
      drainFsync: 1.5,
      e2e: 1.0,
      addBulk: 1.5,
      add: 1.0,
      threads: 0.85,
      retention: 0.9,
      procs: 0.9,
      ensemble: 0.6,
      backlog: 1.0,
      idleP50Ms: 1.5,
      idleP99Ms: 5,
      workerCpuUs: 120,
      serverCpuUs: 120,
      herdIdlePerSec: 50,
      herdPerJob: 30,
    },
  );
});

test('targets: each passes at its bound and misses beyond it', () => {
  const cases: [name: string | RegExp, atBound: Metrics, beyond: Metrics][] = [
    [/^drain, inline \(c=50\)$/, {}, { 'bullmq.drain.rate': 10_100 }],
    [
      'drain, inline (c=50), against Redis fsync always',
      { 'bullmq-fsync.drain.rate': 10_000 / 1.5 },
      { 'bullmq-fsync.drain.rate': 10_000 / 1.49 },
    ],
    ['end to end', {}, { 'bullmq.e2e.rate': 8_100 }],
    ['addBulk', {}, { 'bullmq.addBulk.rate': 20_100 }],
    ['pipelined single add', {}, { 'zkq.add.rate': 19_900 }],
    ['drain, file processor on piscina threads', {}, { 'zkq.threads.rate': 8_490 }],
    ['default retention', {}, { 'zkq.retention.rate': 8_990 }],
    ['idle add → processor start, p50', {}, { 'zkq.idle.p50': 1.51 }],
    ['idle add → processor start, p99', {}, { 'zkq.idle.p99': 5.01 }],
    ['drain, inline, 3-server ensemble', {}, { 'zkq.ensemble.rate': 5_990 }],
    [
      /^backlog of 1,000,000: drain$/,
      { 'zkq.backlog.jobs': 1e6, 'zkq.backlog.drainRate': 12_000, 'bullmq.backlog.drainRate': 12_000 },
      { 'zkq.backlog.jobs': 1e6, 'zkq.backlog.drainRate': 12_000, 'bullmq.backlog.drainRate': 12_100 },
    ],
    ['CPU per job (inline drain), worker', {}, { 'zkq.drain.workerCpuUs': 121 }],
    ['CPU per job (inline drain), server', {}, { 'zkq.drain.serverCpuUs': 121 }],
    [/idle workers, idle$/, {}, { 'zkq.herd.idlePerSec': 50 }],
    [/idle workers, per job added$/, {}, { 'zkq.herd.perJob': 30.1 }],
  ];
  for (const [name, atBound, beyond] of cases) {
    const passing = run(atBound);
    assert.equal(check(passing, name).pass, true, `${name} at its bound`);
    assert.equal(check({ ...passing, ...beyond }, name).pass, false, `${name} beyond its bound`);
  }
});

test('targets: zkq against BullMQ on both Redis systems, the ensemble beside BullMQ', () => {
  const rows = targets(withRatios(run()), options);
  const drain = row(rows, /^drain, inline \(c=50\)$/);
  assert.equal(drain.bullmq, '10,000 jobs/s');
  assert.equal(drain.fsync, '5,000 jobs/s (2.00×)');
  assert.equal(drain.checked, '1.00×');
  assert.equal(row(rows, 'drain, inline (c=50), against').checked, '2.00×');
  assert.equal(row(rows, 'addBulk').fsync, '10,000 jobs/s (3.00×)');
  assert.equal(row(rows, 'idle add → processor start, p50').fsync, '0.90 ms');
  const ensemble = row(rows, 'drain, inline, 3-server ensemble');
  assert.deepEqual(
    [ensemble.zkq, ensemble.bullmq, ensemble.fsync, ensemble.checked],
    ['6,000 jobs/s', '10,000 jobs/s', '5,000 jobs/s (1.20×)', '0.60×'],
  );
});

test('targets: a figure not measured is n/a, the backlog says how to run it', () => {
  const rows = targets(withRatios({ 'zkq.drain.rate': 10_000 }), options);
  for (const name of ['drain, inline (c=50), against', 'drain, inline, 3-server ensemble', 'backlog: drain']) {
    assert.equal(row(rows, name).pass, undefined, name);
  }
  assert.equal(row(rows, 'backlog: drain').zkq, 'not run: --backlog N');
});

test('withRatios: per run, against both Redis systems, the standalone drain and the backlog', () => {
  const m = withRatios(
    run({ 'zkq.backlog.drainRate': 11_000, 'bullmq.backlog.drainRate': 22_000, 'zkq.procs2.rate': 9_000 }),
  );
  assert.equal(m['ratio.drain'], 1);
  assert.equal(m['ratio.drain.fsync'], 2);
  assert.equal(m['ratio.e2e.fsync'], 2);
  assert.equal(m['ratio.add.fsync'], 2.5);
  assert.equal(m['ratio.threads.ofInline'], 0.85);
  assert.equal(m['ratio.procs2.ofInline'], 0.9);
  assert.equal(m['ratio.ensemble.ofStandalone'], 0.6);
  assert.equal(m['ratio.ensemble.fsync'], 1.2);
  assert.equal(m['ratio.backlog'], 0.5);
});

test('render: the median of the per-run ratios, the fsync column and the ensemble row in the report', () => {
  const { text, median } = render(
    [run({ 'bullmq-fsync.drain.rate': 4_000 }), run({ 'bullmq-fsync.drain.rate': 5_000 }), run()],
    {},
    options,
  );
  assert.equal(median['ratio.drain.fsync'], 2);
  assert.match(text, /Redis without persistence and with appendfsync always/);
  assert.match(text, /a 3-server ensemble/);
  assert.match(text, /BullMQ, Redis fsync always/);
  const detailRow = text.split('\n').find((l) => l.startsWith('drain, inline, 3-server ensemble') && /zkq/.test(l));
  assert.ok(detailRow, text);
  // its rate, then against BullMQ's drain on both Redis systems
  assert.match(detailRow, /6,000\s+0\.60×\s+1\.20×/);
});
