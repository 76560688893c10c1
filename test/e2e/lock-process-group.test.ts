/**
 * `zkq lock` stops the whole command when the lock is no longer sure, not
 * only the process it started: a script's own children (a step that is not
 * the script's last, a pipeline, a background job) run on otherwise, beside
 * the next holder's command, and zkq lock would exit while they do.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { TcpProxy } from '@zkq/testing';
import { waitFor } from '../helpers/zk.js';
import { cliEnv, within, ZkqProcess } from './cli.js';

/** A command that says it started, then ticks until it is killed. */
const ticking = (who: string, file: string) =>
  `echo "start ${who}" >> ${file}; while :; do echo "tick ${who}" >> ${file}; sleep 0.05; done`;

/** Whether process `pid` is still there (a zombie, dead but not yet reaped, is not). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

test('lock: a suspended holder leaves no process of its command running, a child that ignores SIGTERM included', async (t) => {
  const env = await cliEnv(t);
  const dir = mkdtempSync(join(tmpdir(), 'zkq-lock-group-'));
  const file = join(dir, 'trace');
  const pidFile = join(dir, 'pid');
  // a script whose work runs in a child of the shell (not exec'd), deaf to SIGTERM
  const worker = join(dir, 'work.sh');
  writeFileSync(worker, `trap '' TERM; echo $$ > ${pidFile}; ${ticking('holder', file)}\n`);
  const proxy = await TcpProxy.start(env.zk);
  const holder = new ZkqProcess([
    'lock',
    'grandchild',
    `--zk=${proxy.connectionString}`,
    `--namespace=${env.namespace}`,
    '--session-timeout=6000',
    '--',
    'sh',
    '-c',
    `sh ${worker} </dev/null >/dev/null 2>&1; echo "holder script done" >> ${file}`,
  ]);
  let workerPid = 0;
  t.after(async () => {
    if (workerPid > 0 && alive(workerPid)) process.kill(workerPid, 'SIGKILL');
    await holder.dispose();
    await proxy.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await waitFor(() => readFileSync(file, 'utf8').includes('tick holder'), {
    timeoutMs: 30_000,
    what: 'the holder running',
  });
  workerPid = Number(readFileSync(pidFile, 'utf8'));
  proxy.partition();
  const held = await within(holder.exited, 30_000, 'the holder stopping');
  assert.equal(held.code, 9, held.stderr);
  assert.equal(alive(workerPid), false, 'the command went on running after zkq lock exited');
  const next = new ZkqProcess(['lock', 'grandchild', ...env.global, '--', 'sh', '-c', `echo "start next" >> ${file}`]);
  t.after(() => next.dispose());
  const ran = await within(next.exited, 60_000, 'the next command');
  assert.equal(ran.code, 0, ran.stderr);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  assert.ok(
    lines.indexOf('start next') > lines.findLastIndex((l) => l.endsWith(' holder')),
    lines.slice(-5).join('\n'),
  );
});
