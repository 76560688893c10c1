/**
 * `zkq lock` under a silent partition (no byte and no close gets through
 * the holder's link, a pulled cable): the holder's command must be stopped
 * before the server can expire its session and let the next `zkq lock` run
 * its own. Both commands append to one trace file while they run; the trace
 * (append order is time order) must show the holder's last line before the
 * other's first. Sessions of 6, 12 and 30 s, side by side.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { TcpProxy } from '@zkq/testing';
import { waitFor } from '../helpers/zk.js';
import { type CliEnv, cliEnv, within, ZkqProcess } from './cli.js';

/** A command that says it started, then ticks until it is killed. */
const ticking = (who: string, file: string) =>
  `echo "start ${who}" >> ${file}; while :; do echo "tick ${who}" >> ${file}; sleep 0.05; done`;

async function neverOverlap(t: { after(fn: () => unknown): void }, env: CliEnv, sessionTimeout: number) {
  const dir = mkdtempSync(join(tmpdir(), 'zkq-lock-partition-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'trace');
  const proxy = await TcpProxy.start(env.zk);
  const name = `report-${sessionTimeout}`;
  const holder = new ZkqProcess([
    'lock',
    name,
    `--zk=${proxy.connectionString}`,
    `--namespace=${env.namespace}`,
    `--session-timeout=${sessionTimeout}`,
    '--',
    'sh',
    '-c',
    ticking('holder', file),
  ]);
  t.after(async () => {
    await holder.dispose();
    await proxy.stop();
  });
  await waitFor(() => readFileSync(file, 'utf8').includes('tick holder'), {
    timeoutMs: 60_000,
    what: 'the holder running',
  });
  const next = new ZkqProcess(['lock', name, ...env.global, '--', 'sh', '-c', `echo "start next" >> ${file}`]);
  t.after(() => next.dispose());
  // the next one waits behind the holder before the link dies
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.ok(next.running, 'the next command waits for the lock');
  proxy.partition();
  const [held, ran] = await within(
    Promise.all([holder.exited, next.exited]),
    sessionTimeout * 3 + 30_000,
    'both locked commands',
  );
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  const firstNext = lines.indexOf('start next');
  const lastHolder = lines.findLastIndex((l) => l.endsWith(' holder'));
  const label = `session of ${sessionTimeout} ms: ${held.stderr}`;
  assert.equal(ran.code, 0, ran.stderr);
  assert.ok(firstNext > lastHolder && lastHolder >= 0, `the holder ran on after the next started: ${label}`);
  assert.equal(held.code, 9, label);
  assert.match(held.stderr, /connection to ZooKeeper suspended while holding the lock/);
}

test('lock: two commands never run at once when the holder is silently partitioned (6, 12 and 30 s sessions)', async (t) => {
  const env = await cliEnv(t);
  await Promise.all([6000, 12_000, 30_000].map((sessionTimeout) => neverOverlap(t, env, sessionTimeout)));
});
