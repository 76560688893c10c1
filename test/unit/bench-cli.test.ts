/**
 * The bench's command line without running a benchmark (no server is started): `--help` names
 * the sections and systems, an unknown one is refused, and `--report` prints a saved run with
 * BullMQ on Redis fsync always and the ensemble in its tables.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function bench(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=zkq-source', 'scripts/bench.ts', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

test('bench --help: the ensemble section, the fsynced Redis system and its options', () => {
  const { status, out } = bench('--help');
  assert.equal(status, 0);
  assert.match(out, /some sections: raw, add, drain, ensemble,/);
  assert.match(out, /zkq, bullmq, bullmq-fsync, bullmq-zk/);
  assert.match(out, /--systems \(zkq,bullmq,bullmq-fsync,bullmq-zk\)/);
  assert.match(out, /--redis-fsync, --redis-fsync-pid/);
});

test('bench: an unknown section or system is refused with the names it knows', () => {
  const section = bench('--only', 'ensembel');
  assert.notEqual(section.status, 0);
  assert.match(section.err, /--only: unknown 'ensembel' \(raw, add, drain, ensemble,/);
  const system = bench('--systems', 'redis-fsync');
  assert.notEqual(system.status, 0);
  assert.match(system.err, /--systems: unknown 'redis-fsync' \(zkq, bullmq, bullmq-fsync, bullmq-zk\)/);
});

test('bench --report: a saved run with BullMQ on Redis fsync always and the ensemble', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zkq-bench-report-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const run = {
    load: 1,
    'zkq.drain.rate': 12_000,
    'bullmq.drain.rate': 20_000,
    'bullmq-fsync.drain.rate': 8_000,
    'zkq.ensemble.rate': 8_400,
  };
  const file = join(dir, 'run.json');
  writeFileSync(file, JSON.stringify({ runs: [run], options: { jobs: 20_000, concurrency: 50 } }));
  const { status, out, err } = bench('--report', file);
  assert.equal(status, 0, err);
  const line = (start: RegExp) => out.split('\n').find((l) => start.test(l)) ?? '';
  assert.match(line(/^drain, inline\s+BullMQ, Redis fsync always/), /8,000/);
  assert.match(line(/^drain, inline, 3-server ensemble\s+zkq/), /8,400\s+0\.42×\s+1\.05×/);
  assert.match(line(/^drain, inline \(c=50\), against Redis fsync always/), /8,000 jobs\/s \(1\.50×\).*1\.50×\s+PASS$/);
  assert.match(line(/^drain, inline, 3-server ensemble\s+≥ 0\.6× standalone/), /0\.70×\s+PASS$/);
});
